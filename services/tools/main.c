/*  sluice-tools - what sluice knows of tools, for operators.

    sluice-tools pin --team T [--keys-file F] --out pins.yaml
                     (--from FILE [--dialect D] | --audit URL)

    Writes the pins file of a team (sl_pins.h): the digest each tool's
    definition must have, from what its agents sent. --from reads a request
    body of dialect D (openai, anthropic, responses, gemini) or, without
    --dialect, a JSON list of definitions as sluice-audit's GET /api/tools
    gives them (sl_pinner.h); --audit URL asks sluice-audit itself
    (GET URL/api/tools?team=T). An existing --out file keeps the other
    teams' pins; the team's own are replaced. --keys-file names the keys
    file the pins are checked against (the team must be one it names),
    as the pins file names it: from the pins file's directory.
    Exit status: 0 written, 1 failed (the reason on stderr), 2 bad usage.
*/
#include <curl/curl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_yaml.h"
#include "common/dialects/sl_dialect.h"
#include "common/identity/sl_keyring.h"
#include "common/tools/sl_pins.h"
#include "services/tools/sl_pinner.h"

#define S_EXIT_FAILED 1
#define S_EXIT_USAGE 2
#define S_MAX_INPUT (64u << 20)         //  bytes of a request or a definitions list
#define S_AUDIT_TIMEOUT_S 30L

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: sluice-tools pin --team T [--keys-file F] --out pins.yaml\n"
        "                        (--from FILE [--dialect D] | --audit URL)\n"
        "\n"
        "  --team       the team whose tools are pinned\n"
        "  --keys-file  the keys file (a path from the pins file's directory, or\n"
        "               absolute): the team must be one it names; the pins file\n"
        "               names it, so every load checks its teams again\n"
        "  --out        the pins file to write (other teams' pins in it are kept)\n"
        "  --from       a request body of dialect --dialect (openai, anthropic,\n"
        "               responses, gemini), or without --dialect a JSON list of\n"
        "               definitions [{\"team\",\"name\",\"server\",\"digest\",\"description\",\"schema\"}]\n"
        "  --audit      sluice-audit's console URL: GET URL/api/tools?team=T\n");
}

static size_t
s_collect (char *data, size_t size, size_t count, void *arg)
{
    sl_buf_t *out = arg;
    if (out->len + size * count > S_MAX_INPUT)
        return 0;
    sl_buf_append (out, data, size * count);
    return size * count;
}

//  GET URL/api/tools?team=T into out. 0, or -1 with a message printed.
static int
s_fetch_audit (const char *url, const char *team, sl_buf_t *out)
{
    CURL *curl = curl_easy_init ();
    if (!curl)
        return -1;
    char *escaped = curl_easy_escape (curl, team, 0);
    sl_buf_t full = { 0 };
    sl_buf_printf (&full, "%s%s/api/tools?team=%s", url, url [strlen (url) - 1] == '/' ? "" : "",
                   escaped ? escaped : team);
    curl_free (escaped);
    curl_easy_setopt (curl, CURLOPT_URL, sl_buf_cstr (&full));
    curl_easy_setopt (curl, CURLOPT_WRITEFUNCTION, s_collect);
    curl_easy_setopt (curl, CURLOPT_WRITEDATA, out);
    curl_easy_setopt (curl, CURLOPT_TIMEOUT, S_AUDIT_TIMEOUT_S);
    curl_easy_setopt (curl, CURLOPT_FAILONERROR, 1L);
    const char *key = getenv ("SLUICE_CONSOLE_KEY");
    struct curl_slist *headers = NULL;
    if (key && *key) {
        sl_buf_t h = { 0 };
        sl_buf_printf (&h, "Authorization: Bearer %s", key);
        headers = curl_slist_append (headers, sl_buf_cstr (&h));
        sl_buf_free (&h);
        curl_easy_setopt (curl, CURLOPT_HTTPHEADER, headers);
    }
    CURLcode rc = curl_easy_perform (curl);
    if (rc != CURLE_OK)
        fprintf (stderr, "sluice-tools: GET %s: %s\n", sl_buf_cstr (&full), curl_easy_strerror (rc));
    curl_slist_free_all (headers);
    curl_easy_cleanup (curl);
    sl_buf_free (&full);
    return rc == CURLE_OK ? 0 : -1;
}

static int
s_pin (const char *team, const char *keys_file, const char *out_path, const char *from, const char *dialect_name,
       const char *audit)
{
    if (keys_file) {
        //  Named as the pins file names it: from the pins file's directory.
        sl_buf_t path = { 0 };
        if (keys_file [0] == '/')
            sl_buf_puts (&path, keys_file);
        else {
            char *copy = strdup (out_path);
            sl_buf_printf (&path, "%s/%s", dirname (copy), keys_file);
            free (copy);
        }
        char *error = NULL;
        sl_keyring_t *ring = sl_keyring_load (sl_buf_cstr (&path), &error);
        sl_buf_free (&path);
        bool known = ring && sl_keyring_team (ring, team);
        if (!known)
            fprintf (stderr, "sluice-tools: %s\n", !ring ? (error ? error : keys_file) : "the keys file names no such team");
        free (error);
        sl_keyring_unref (&ring);
        if (!known)
            return S_EXIT_FAILED;
    }
    //  The other teams' pins stay as they are; the team's are replaced.
    sl_pins_t *pins = NULL;
    FILE *exists = fopen (out_path, "rb");
    if (exists) {
        fclose (exists);
        char *error = NULL;
        pins = sl_pins_load (out_path, &error);
        if (!pins) {
            fprintf (stderr, "sluice-tools: %s (not overwritten)\n", error ? error : out_path);
            free (error);
            return S_EXIT_FAILED;
        }
        sl_pins_drop_team (pins, team);
    }
    else
        pins = sl_pins_new ();
    if (keys_file)
        sl_pins_set_keys (pins, keys_file);
    sl_buf_t input = { 0 }, why = { 0 };
    char *error = NULL;
    int count = -1;
    if (audit) {
        if (s_fetch_audit (audit, team, &input) == 0)
            count = sl_pinner_list (pins, team, sl_buf_str (&input), &why);
    }
    else
    if (sl_yaml_read (from, S_MAX_INPUT, &input, &error)) {
        sl_buf_puts (&why, error ? error : from);
        free (error);
    }
    else
    if (dialect_name) {
        int dialect = sl_dialect_parse (dialect_name);
        if (!dialect)
            sl_buf_printf (&why, "unknown dialect '%s'", dialect_name);
        else
            count = sl_pinner_request (pins, team, dialect, sl_buf_str (&input), &why);
    }
    else
        count = sl_pinner_list (pins, team, sl_buf_str (&input), &why);
    int rc = S_EXIT_FAILED;
    if (count >= 0) {
        sl_buf_t text = { 0 };
        sl_pins_write (pins, &text);
        FILE *f = fopen (out_path, "wb");
        if (f && fwrite (text.data, 1, text.len, f) == text.len && fclose (f) == 0) {
            fprintf (stderr, "sluice-tools: pinned %d tool definitions of team %s in %s\n", count, team, out_path);
            rc = 0;
        }
        else
            fprintf (stderr, "sluice-tools: cannot write %s\n", out_path);
        sl_buf_free (&text);
    }
    else
    if (why.len)
        fprintf (stderr, "sluice-tools: %s\n", sl_buf_cstr (&why));
    sl_buf_free (&input);
    sl_buf_free (&why);
    sl_pins_destroy (&pins);
    return rc;
}

int
main (int argc, char **argv)
{
    if (argc < 2 || strcmp (argv [1], "pin") != 0) {
        s_usage (argc >= 2 && (strcmp (argv [1], "-h") == 0 || strcmp (argv [1], "--help") == 0) ? stdout : stderr);
        return argc >= 2 && argv [1][0] == '-' && argv [1][1] == 'h' ? 0 : S_EXIT_USAGE;
    }
    static const struct option longopts [] = {
        { "team", required_argument, NULL, 't' },
        { "keys-file", required_argument, NULL, 'k' },
        { "out", required_argument, NULL, 'o' },
        { "from", required_argument, NULL, 'f' },
        { "dialect", required_argument, NULL, 'd' },
        { "audit", required_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *team = NULL, *keys = NULL, *out = NULL, *from = NULL, *dialect = NULL, *audit = NULL;
    int c;
    optind = 2;
    while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1)
        switch (c) {
            case 't': team = optarg; break;
            case 'k': keys = optarg; break;
            case 'o': out = optarg; break;
            case 'f': from = optarg; break;
            case 'd': dialect = optarg; break;
            case 'a': audit = optarg; break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return S_EXIT_USAGE;
        }
    if (optind < argc || !team || !*team || !out || !from == !audit || (dialect && !from)) {
        fprintf (stderr, "sluice-tools: %s\n", !team || !*team ? "--team is required" : !out ? "--out is required"
                 : !from == !audit ? "one of --from and --audit" : dialect && !from ? "--dialect goes with --from"
                 : "unexpected argument");
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    curl_global_init (CURL_GLOBAL_DEFAULT);
    int rc = s_pin (team, keys, out, from, dialect, audit);
    curl_global_cleanup ();
    return rc;
}
