/*  Unit tests: services/audit/store/sl_embedded, the files built into
    sluice-audit (the console's pages, the store's migrations): each found
    by its name under services/audit/, whole, with a NUL after it; the
    migrations numbered from 1 without a gap. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "services/audit/store/sl_embedded.h"
#include "services/audit/store/sl_store.h"

Test (sl_embedded, each_file_is_found_by_its_name_whole)
{
    const char *names [] = { "console/web/index.html", "console/web/app.js", "console/web/style.css",
                             "store/migrations/001_init.sql" };
    for (size_t i = 0; i < sizeof names / sizeof names [0]; i++) {
        const sl_embedded_t *f = sl_embedded_find (names [i]);
        cr_assert_not_null (f, "%s", names [i]);
        cr_expect_str_eq (f->name, names [i]);
        cr_expect_gt (f->size, 0, "%s", names [i]);
        cr_expect_eq (f->data [f->size], 0, "%s: a NUL after it, for text", names [i]);
        cr_expect_eq (strlen ((const char *) f->data), f->size, "%s: text without a NUL inside", names [i]);
    }
    cr_expect_not_null (strstr ((const char *) sl_embedded_find ("console/web/index.html")->data, "<html"));
    cr_expect_not_null (strstr ((const char *) sl_embedded_find ("store/migrations/001_init.sql")->data,
                                "CREATE TABLE"));
    //  Nothing else: not a name without its folder, not a file of the source tree.
    cr_expect_null (sl_embedded_find ("index.html"));
    cr_expect_null (sl_embedded_find ("console/web/"));
    cr_expect_null (sl_embedded_find ("store/sl_store.c"));
    cr_expect_null (sl_embedded_find (""));
    cr_expect_null (sl_embedded_find (NULL));
}

Test (sl_embedded, the_migrations_are_numbered_from_one_without_a_gap)
{
    int latest = sl_store_latest_version ();
    cr_assert_geq (latest, 8, "the eight migrations of this tree at least");
    int seen = 0;
    for (const sl_embedded_t *f = sl_embedded_files; f->name; f++) {
        int n = 0;
        if (sscanf (f->name, "store/migrations/%d_", &n) == 1)
            seen++;
        else
            cr_expect_eq (strncmp (f->name, "console/web/", 12), 0, "only pages and migrations: %s", f->name);
    }
    cr_expect_eq (seen, latest, "one file per version");
    for (int v = 1; v <= latest; v++) {
        bool found = false;
        for (const sl_embedded_t *f = sl_embedded_files; f->name; f++) {
            int n = 0;
            found |= sscanf (f->name, "store/migrations/%d_", &n) == 1 && n == v;
        }
        cr_expect (found, "migration %d", v);
    }
}
