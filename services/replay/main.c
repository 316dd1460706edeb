/*  sluice-replay - run a captured upstream response through the stages.

    sluice-replay --dialect openai|anthropic|responses|gemini [--policy FILE]
                  [--keys-file FILE --team NAME]
                  [--request FILE [--request-only]] [--model NAME]
                  [--render blocks|openai|anthropic|responses|gemini] [--jsonl]

    (the dialects: every registered module's name).

    Reads the capture on stdin as it arrives and writes to stdout what the
    stages make of it (see sl_replay.h): by default one JSON line per block
    and a last line with the finish and usage; with --policy the judge's
    verdicts too; with --render the bytes a client of that dialect would
    receive. A policy file's includes are read with it (a team's file
    brings its base). --keys-file and --team judge under the policy the
    pipeline gives that team's streams: the team's file in the keys file,
    or --policy (the default) when the team names none. --request gives the judge what the gateway would have known
    of the request behind the capture (model, tool definitions for schema
    rules, last user message), read from the client's request body with
    the gateway's own parser; with a policy that has request rules, the
    request is judged first as the gateway judges it: its verdicts, then
    the request as it would go upstream (redacted, results withheld) or
    its refusal. --request-only stops there (no capture is read). Exit
    status: 0 done, 1 malformed input, 2 bad usage.
*/
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"
#include "common/stages/sl_emitter.h"
#include "common/dialects/sl_job.h"
#include "common/stages/sl_replay.h"
#include "common/identity/sl_keyring.h"

#define S_READ_SIZE 65536               //  bytes per read of stdin
#define S_MAX_REQUEST (10u << 20)       //  largest --request file, as the gateway's --max-body
#define S_NO_MODEL "unknown"           //  the model of a request that names none in its body (Gemini)
#define S_EXIT_MALFORMED 1
#define S_EXIT_USAGE 2

//  The dialects' names, a|b|c, from the registry.
static void
s_usage (FILE *out)
{
    sl_buf_t names = { 0 };
    sl_dialect_names ("|", "|", NULL, &names);
    fprintf (out,
        "usage: sluice-replay --dialect %s\n"
        "                     [--policy FILE] [--keys-file FILE --team NAME]\n"
        "                     [--request FILE [--request-only]] [--model NAME]\n"
        "                     [--render blocks|%s]\n"
        "                     [--jsonl] < capture\n"
        "\n"
        "  --dialect   the upstream dialect the capture was recorded in (required)\n"
        "  --policy    judge tool calls with this policy file (LLM judges are not\n"
        "              asked: their rules take their on_error action; nobody is\n"
        "              asked about an ask rule's calls: they are blocked); the\n"
        "              files it includes are read with it\n"
        "  --keys-file, --team  judge under the policy file the keys file gives\n"
        "              the team (--policy, the default, when it names none)\n"
        "  --request   the client's request body (JSON, same dialect) behind the\n"
        "              capture: the judge sees its model, tools and last user message;\n"
        "              a policy's request rules judge it first (verdicts, then the\n"
        "              request as it would go upstream, or {\"refused\": ...})\n"
        "  --request-only  judge the request and stop: no capture is read\n"
        "  --model     the model asked for (Gemini names it in the path, not the body)\n"
        "  --render    blocks (default): one JSON line per block, then the finish;\n"
        "              a dialect: the bytes a client of that dialect would receive\n"
        "  --jsonl     the capture is JSONL, one SSE data payload per line\n"
        "              (detected when the first byte is '{'; '[' is a JSON array)\n",
        sl_buf_cstr (&names), sl_buf_cstr (&names));
    sl_buf_free (&names);
}

static bool
s_read_file (const char *path, sl_buf_t *out)
{
    FILE *f = fopen (path, "rb");
    if (!f)
        return false;
    char chunk [8192];
    size_t n;
    bool ok = true;
    while (ok && (n = fread (chunk, 1, sizeof chunk, f)) > 0) {
        sl_buf_append (out, chunk, n);
        ok = out->len <= S_MAX_REQUEST;
    }
    ok = ok && !ferror (f);
    fclose (f);
    return ok;
}

//  Read the client's request with the gateway's parser of its dialect.
//  0 ok; -1 with a message printed.
static int
s_load_request (const char *path, int dialect, const char *model, sl_job_t *req)
{
    sl_buf_t body = { 0 };
    if (!s_read_file (path, &body)) {
        fprintf (stderr, "sluice-replay: cannot read %s (or it is over %u bytes)\n", path,
                 S_MAX_REQUEST);
        sl_buf_free (&body);
        return -1;
    }
    //  A Gemini request names its model in the path, not in its body.
    sl_endpoint_t endpoint = { .dialect = dialect, .stream = true, .sse = true };
    snprintf (endpoint.model, sizeof endpoint.model, "%s", model ? model : S_NO_MODEL);
    int rc = sl_job_parse (&endpoint, sl_buf_str (&body), req);
    sl_buf_free (&body);
    if (rc) {
        fprintf (stderr, "sluice-replay: %s: the gateway would refuse this request: %s\n", path,
                 sl_buf_cstr (&req->error_message));
        return -1;
    }
    return 0;
}

//  The policy file a team's streams run under, as the pipeline picks it:
//  the team's in the keys file, else the default (fallback, maybe NULL).
//  0 with *path set (the keyring, which *path lives in, goes to *ring);
//  -1 with a message printed.
static int
s_team_policy (const char *keys_path, const char *team, const char *fallback, sl_keyring_t **ring,
               const char **path)
{
    char *error = NULL;
    *ring = sl_keyring_load (keys_path, &error);
    if (!*ring) {
        fprintf (stderr, "sluice-replay: %s\n", error ? error : keys_path);
        free (error);
        return -1;
    }
    const sl_team_t *t = sl_keyring_team (*ring, team);
    if (!t) {
        fprintf (stderr, "sluice-replay: %s names no team '%s'\n", keys_path, team);
        sl_keyring_unref (ring);
        return -1;
    }
    *path = t->policy ? t->policy : fallback;
    return 0;
}

static void
s_write (void *arg, const char *data, size_t size)
{
    (void) arg;
    fwrite (data, 1, size, stdout);
}

int
main (int argc, char **argv)
{
    static const struct option options [] = {
        { "dialect", required_argument, NULL, 'd' },
        { "policy", required_argument, NULL, 'p' },
        { "keys-file", required_argument, NULL, 'k' },
        { "team", required_argument, NULL, 't' },
        { "render", required_argument, NULL, 'r' },
        { "request", required_argument, NULL, 'q' },
        { "model", required_argument, NULL, 'm' },
        { "request-only", no_argument, NULL, 'o' },
        { "jsonl", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *dialect = NULL, *policy_path = NULL, *render = "blocks";
    const char *request_path = NULL, *model = NULL, *keys_path = NULL, *team = NULL;
    bool jsonl = false, request_only = false;
    int c;
    while ((c = getopt_long (argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
            case 'd': dialect = optarg; break;
            case 'p': policy_path = optarg; break;
            case 'k': keys_path = optarg; break;
            case 't': team = optarg; break;
            case 'r': render = optarg; break;
            case 'q': request_path = optarg; break;
            case 'm': model = optarg; break;
            case 'j': jsonl = true; break;
            case 'o': request_only = true; break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return S_EXIT_USAGE;
        }
    }
    if (optind < argc || !dialect || !keys_path != !team) {
        fprintf (stderr, "sluice-replay: %s\n", !dialect ? "--dialect is required"
                 : !keys_path != !team ? "--keys-file and --team go together" : "unexpected argument");
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    sl_replay_opts_t opts = { 0 };
    opts.dialect = sl_dialect_parse (dialect);
    if (!opts.dialect) {
        fprintf (stderr, "sluice-replay: unknown dialect '%s'\n", dialect);
        return S_EXIT_USAGE;
    }
    if (!sl_replay_can_decode (opts.dialect)) {
        fprintf (stderr, "sluice-replay: this build cannot decode %s streams\n", dialect);
        return S_EXIT_USAGE;
    }
    if (strcmp (render, "blocks") != 0) {
        opts.render = sl_dialect_parse (render);
        if (!opts.render) {
            fprintf (stderr, "sluice-replay: unknown --render '%s'\n", render);
            return S_EXIT_USAGE;
        }
        if (!sl_emitter_can_render (opts.render)) {
            fprintf (stderr, "sluice-replay: this build cannot render %s responses\n", render);
            return S_EXIT_USAGE;
        }
    }
    opts.input = jsonl ? SL_REPLAY_INPUT_JSONL : SL_REPLAY_INPUT_AUTO;
    sl_job_t request = { 0 };
    if (request_path) {
        if (s_load_request (request_path, opts.dialect, model, &request)) {
            sl_job_clear (&request);
            return S_EXIT_USAGE;
        }
        opts.tools = sl_buf_str (&request.tools);
        opts.last_user = sl_buf_str (&request.last_user);
        //  Not the placeholder a request without a model in its body got.
        if (request.model.len && !sl_str_eq (sl_buf_str (&request.model), S_NO_MODEL))
            opts.model = sl_buf_str (&request.model);
        opts.request = &request;
    }
    else
    if (request_only) {
        fprintf (stderr, "sluice-replay: --request-only needs --request\n");
        return S_EXIT_USAGE;
    }
    if (model)
        opts.model = sl_str (model);
    sl_keyring_t *ring = NULL;
    if (team && s_team_policy (keys_path, team, policy_path, &ring, &policy_path)) {
        sl_job_clear (&request);
        return S_EXIT_USAGE;
    }
    if (policy_path) {
        char *error = NULL;
        opts.policy = sl_policy_load (policy_path, &error);
        sl_keyring_unref (&ring);       //  (policy_path may be one of its strings)
        if (!opts.policy) {
            fprintf (stderr, "sluice-replay: %s\n", error ? error : "the policy does not load");
            free (error);
            sl_job_clear (&request);
            return S_EXIT_USAGE;
        }
    }
    sl_keyring_unref (&ring);
    const char *why = NULL;
    sl_replay_t *replay = sl_replay_new (&opts, s_write, NULL, &why);
    sl_policy_unref (&opts.policy);
    sl_job_clear (&request);        //  the stream's start holds copies now
    if (!replay) {
        fprintf (stderr, "sluice-replay: %s\n", why);
        return S_EXIT_USAGE;
    }
    static char buf [S_READ_SIZE];
    int rc = 0;
    if (request_only || sl_replay_refused (replay)) {
        //  Nothing of a capture: the request was all there was to judge,
        //  or it never went upstream.
        fflush (stdout);
        sl_replay_destroy (&replay);
        return 0;
    }
    while (rc == 0) {
        ssize_t n = read (STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf (stderr, "sluice-replay: reading stdin: %s\n", strerror (errno));
            rc = -2;
            break;
        }
        if (n == 0) {
            rc = sl_replay_finish (replay);
            break;
        }
        rc = sl_replay_feed (replay, buf, (size_t) n);
        fflush (stdout);                //  a live capture shows as it comes
    }
    fflush (stdout);
    sl_replay_destroy (&replay);
    return rc == 0 ? 0 : S_EXIT_MALFORMED;
}
