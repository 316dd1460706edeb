/*  Unit tests: common/base/sl_sidmap. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_sidmap.h"

static void
s_sid (uint8_t sid [16], uint32_t n)
{
    memset (sid, 0, 16);
    //  Many keys share their first bytes: probing and deletion get a workout.
    sid [0] = (uint8_t) (n % 7);
    memcpy (sid + 8, &n, sizeof n);
}

Test (sl_sidmap, put_get_remove_many)
{
    sl_sidmap_t *map = sl_sidmap_new ();
    enum { N = 5000 };
    static int values [N];
    uint8_t sid [16];
    for (uint32_t i = 0; i < N; i++) {
        s_sid (sid, i);
        values [i] = (int) i;
        sl_sidmap_put (map, sid, &values [i]);
    }
    cr_assert_eq (sl_sidmap_size (map), N);
    for (uint32_t i = 0; i < N; i += 2) {
        s_sid (sid, i);
        cr_assert_eq (sl_sidmap_remove (map, sid), &values [i]);
    }
    cr_assert_eq (sl_sidmap_size (map), N / 2);
    for (uint32_t i = 0; i < N; i++) {
        s_sid (sid, i);
        void *v = sl_sidmap_get (map, sid);
        if (i % 2)
            cr_assert_eq (v, &values [i], "key %u survives removals of others", i);
        else
            cr_assert_null (v, "key %u was removed", i);
    }
    size_t count = 0, cursor = 0;
    while (sl_sidmap_next (map, &cursor, NULL))
        count++;
    cr_expect_eq (count, N / 2);
    sl_sidmap_destroy (&map);
    cr_expect_null (map);
    sl_sidmap_destroy (&map);           //  safe twice
}

Test (sl_sidmap, replace_keeps_size)
{
    sl_sidmap_t *map = sl_sidmap_new ();
    uint8_t sid [16] = { 1 };
    int a, b;
    sl_sidmap_put (map, sid, &a);
    sl_sidmap_put (map, sid, &b);
    cr_expect_eq (sl_sidmap_size (map), 1);
    cr_expect_eq (sl_sidmap_get (map, sid), &b);
    cr_expect_null (sl_sidmap_remove (map, (uint8_t [16]) { 2 }));
    sl_sidmap_destroy (&map);
}

static bool
s_is_odd (void *value, void *arg)
{
    (void) arg;
    return *(int *) value % 2 == 1;
}

static int s_destroyed;

static void
s_count_destroy (void *value)
{
    (void) value;
    s_destroyed++;
}

Test (sl_sidmap, drop_if_removes_exactly_the_matches)
{
    sl_sidmap_t *m = sl_sidmap_new ();
    static int values [300];
    for (int i = 0; i < 300; i++) {
        uint8_t sid [16] = { 0 };
        uint64_t h = (uint64_t) (i + 1) * 0x9E3779B97F4A7C15ull;
        memcpy (sid, &h, sizeof h);
        sid [8] = (uint8_t) i;
        sid [9] = (uint8_t) (i >> 8);
        values [i] = i;
        sl_sidmap_put (m, sid, &values [i]);
    }
    s_destroyed = 0;
    cr_expect_eq (sl_sidmap_drop_if (m, s_is_odd, NULL, s_count_destroy), 150);
    cr_expect_eq (s_destroyed, 150);
    cr_expect_eq (sl_sidmap_size (m), 150);
    size_t cursor = 0;
    int *v, odd = 0;
    while ((v = sl_sidmap_next (m, &cursor, NULL)))
        odd += *v % 2;
    cr_expect_eq (odd, 0, "only even values are left");
    sl_sidmap_destroy (&m);
}
