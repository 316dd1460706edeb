/*  recordings.h - the recorded provider streams the tests run over.

    Two places hold recordings, each with one directory per provider
    dialect (the dialect module's `corpus` name: openai-chat, anthropic,
    openai-responses, gemini):

      tests/recordings/   the project's own: what sluice-mock sends for a few
                          scenarios in each dialect (tests/recordings/record.sh
                          writes them); always there;
      ../shared/corpus/   real providers' streams that other projects
                          recorded ($SLUICE_CORPUS to point elsewhere); kept
                          outside the repository, and may be absent.

    rec_list lists both, sorted by name. When the corpus is absent it says
    so once on stderr, naming what did not run, and the tests go on with
    the project's own recordings: no test skips as a whole for it. A test
    that finds none of the project's own fails (rec_list asserts).

    Header-only (static functions): the unit and the integration runners
    both include it.
*/
#ifndef TESTS_RECORDINGS_H
#define TESTS_RECORDINGS_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"

#define REC_OWN_DIR "tests/recordings"
#define REC_CORPUS_DEFAULT "../shared/corpus"
#define REC_FILE_MAX (64u << 20)        //  bytes of one recording read

typedef struct {
    char path [1024];
    char name [256];                    //  the file's name
    const char *dir;                    //  its dialect's directory name
    const char *dialect_name;           //  "openai", "anthropic", ...
    int dialect;                        //  SL_DIALECT_*
    bool own;                           //  the project's own (else the corpus's)
} rec_file_t;

static inline const char *
rec_corpus (void)
{
    const char *dir = getenv ("SLUICE_CORPUS");
    return dir && *dir ? dir : REC_CORPUS_DEFAULT;
}

static inline bool
rec_corpus_present (void)
{
    DIR *d = opendir (rec_corpus ());
    if (d)
        closedir (d);
    return d != NULL;
}

static inline int
rec_cmp (const void *a, const void *b)
{
    return strcmp (((const rec_file_t *) a)->name, ((const rec_file_t *) b)->name);
}

//  The files of one root into files [*n ..]; how many it had.
static inline size_t
rec_list_root (const char *root, bool own, rec_file_t *files, size_t max, size_t *n)
{
    size_t found = 0;
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (!d->corpus)
            continue;
        char dir [512];
        snprintf (dir, sizeof dir, "%.400s/%s", root, d->corpus);
        DIR *dp = opendir (dir);
        struct dirent *de;
        while (dp && (de = readdir (dp)) && *n < max) {
            if (de->d_name [0] == '.' || strcmp (de->d_name, "README.md") == 0)
                continue;
            rec_file_t *f = &files [(*n)++];
            snprintf (f->path, sizeof f->path, "%s/%s", dir, de->d_name);
            snprintf (f->name, sizeof f->name, "%s", de->d_name);
            f->dir = d->corpus;
            f->dialect_name = d->name;
            f->dialect = d->id;
            f->own = own;
            found++;
        }
        if (dp)
            closedir (dp);
    }
    return found;
}

//  Every recording: the project's own, then the corpus's when it is there
//  (who: the test, for the line that says what did not run without it).
static inline size_t
rec_list (rec_file_t *files, size_t max, const char *who)
{
    const char *why = NULL;
    cr_assert_eq (sl_dialect_init (&why), 0, "%s", why ? why : "");
    size_t n = 0;
    size_t own = rec_list_root (REC_OWN_DIR, true, files, max, &n);
    cr_assert_gt (own, 0, "the project's own recordings are in " REC_OWN_DIR " (tests/recordings/record.sh)");
    if (rec_corpus_present ())
        rec_list_root (rec_corpus (), false, files, max, &n);
    else
        fprintf (stderr, "%s: %s is absent: ran on the project's own %zu recordings only, not on the "
                         "corpus's recordings of real providers\n", who, rec_corpus (), own);
    qsort (files, n, sizeof *files, rec_cmp);
    return n;
}

static inline bool
rec_read (const char *path, sl_buf_t *out)
{
    FILE *f = fopen (path, "rb");
    if (!f)
        return false;
    char chunk [65536];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && out->len < REC_FILE_MAX)
        sl_buf_append (out, chunk, n);
    fclose (f);
    return true;
}

static inline bool
rec_ends_with (const char *s, const char *suffix)
{
    size_t n = strlen (s), m = strlen (suffix);
    return n >= m && strcmp (s + n - m, suffix) == 0;
}

//  A recording as the SSE bytes its upstream sent: .sse files are those
//  bytes; .chunks.jsonl files hold one data payload per line and .json
//  files a JSON array of chunks (the project that recorded them removed
//  the framing), so each becomes one "data:" event.
static inline void
rec_as_sse (const rec_file_t *file, sl_str_t raw, sl_buf_t *out)
{
    if (rec_ends_with (file->name, ".jsonl")) {
        const char *p = raw.ptr, *end = raw.ptr + raw.len;
        while (p < end) {
            const char *nl = memchr (p, '\n', (size_t) (end - p));
            const char *e = nl ? nl : end;
            if (e > p) {
                sl_buf_puts (out, "data: ");
                sl_buf_append (out, p, (size_t) (e - p));
                sl_buf_puts (out, "\n\n");
            }
            p = e + 1;
        }
    }
    else
    if (rec_ends_with (file->name, ".json")) {
        sl_json_iter_t it;
        sl_str_t elem;
        cr_assert_eq (sl_json_array (&it, raw), 0, "%s is a JSON array", file->name);
        while (sl_json_next_elem (&it, &elem) == 1) {
            //  Pretty-printed chunks: one data line each, newlines dropped.
            sl_buf_puts (out, "data: ");
            for (size_t i = 0; i < elem.len; i++)
                if (elem.ptr [i] != '\n' && elem.ptr [i] != '\r')
                    sl_buf_putc (out, elem.ptr [i]);
            sl_buf_puts (out, "\n\n");
        }
    }
    else
        sl_buf_append_str (out, raw);
}

#endif
