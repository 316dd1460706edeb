/*  Integration: the official SDKs (tests/sdk, pinned in its package.json
    and package-lock.json) as real clients.

    1. Against a running stack: each .test.mjs file in tests/sdk is run
       with node's test runner against the stack started here (the mock
       upstream in every dialect through a routes file that names its
       scenarios, tests/agents/policy.yaml: the default policy's rule, a
       slow LLM judge and a terminate rule); the base URLs reach them as
       SLUICE_OPENAI_BASE_URL, SLUICE_ANTHROPIC_BASE_URL and
       SLUICE_GEMINI_BASE_URL. When the recorded provider streams
       (../shared/corpus, or $SLUICE_CORPUS) are there, the mock replays
       them and SLUICE_SDK_CORPUS names them, so that the tests can compare
       what each SDK makes of a recording through sluice with what it
       makes of the same recording straight from the provider. The
       clouds' upstreams are on the mock too (SLUICE_SDK_CLOUDS): Gemini
       and Claude on Vertex AI, with tokens the ingest gets from the
       mock's token endpoint for a key file made here, and Azure OpenAI;
       every client's crossing tests run against each of them (a blocked
       tool call among them), and the mock's record shows they got there.
    2. The emitter's renderings, every dialect: the emitter library renders
       a hand-made judged stream holding every block kind (and one that
       fails mid-stream) for each client dialect; the files in
       tests/sdk/render serve those bytes to each SDK and check what its
       own stream helpers make of them. This covers the dialects whose
       upstream side is not decoded yet, without pretending to be a stack.

    Skipped, with the reason, only when the packages are not installed
    (make sdk-deps installs them; it says why when it cannot). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/emit_driver.h"
#include "tests/integration/harness.h"
#include "tests/integration/sdk_runner.h"
#include "tests/jwt_fixture.h"
#include "tests/keyfile_fixture.h"

#define SDK_DIR SDK_RUNNER_DIR
#define SDK_CORPUS_DEFAULT "../shared/corpus"
#define SDK_TIMEOUT_MS 180000           //  the whole node run
#define SDK_TEST_TIMEOUT_MS 60000      //  each test
#define SDK_POLICY "tests/agents/policy.yaml"

static void
s_require_packages (void)
{
    const char *missing = sdk_runner_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
}

//  Run node's test runner on the .test.mjs files of dir, with env added;
//  true when every test passed within the time limits.
static bool
s_run_node (const char *dir, const char *const *env, const char *log)
{
    return sdk_run_wait (sdk_run_start (dir, env, log, SDK_TEST_TIMEOUT_MS), SDK_TIMEOUT_MS);
}

//  The mock in every dialect; its scenarios are the models routing names.
//  A model "<scenario>@<dialect>" goes to the mock of that dialect, whatever
//  the client's (the mock reads the scenario before the @): the tests of
//  every client run every scenario against every upstream dialect.
//  The clouds' upstreams are the mock too: Gemini and Claude on Vertex AI
//  with a token of the mock's token endpoint (a key file made by the
//  test, @KEY@), Azure OpenAI's v1 API with Entra ID tokens of the
//  mock's token endpoint (a client secret).
static const char s_routes [] =
    HARNESS_MOCK_PROVIDERS
    "  - { name: mock-vertex, dialect: vertex, base_url: \"@MOCK@\", region: us-east5, project: p1,\n"
    "      credentials_file: \"@KEY@\" }\n"
    "  - { name: mock-vertex-anthropic, dialect: vertex-anthropic, base_url: \"@MOCK@\", region: us-east5,\n"
    "      project: p1, credentials_file: \"@KEY@\" }\n"
    "  - { name: mock-azure, dialect: azure, base_url: \"@MOCK@\" }\n"
    "  - { name: mock-bedrock, dialect: bedrock, base_url: \"@MOCK@\", region: us-west-2 }\n"
    "  - { name: mock-bedrock-anthropic, dialect: bedrock-anthropic, base_url: \"@MOCK@\", region: us-west-2 }\n"
    "routes:\n"
    "  - { model: mock-text, provider: mock-openai }\n"
    "  - { model: mock-tools, provider: mock-openai }\n"
    "  - { model: mock-text, provider: mock-responses }\n"
    "  - { model: mock-tools, provider: mock-responses }\n"
    "  - { model: mock-text, provider: mock-anthropic }\n"
    "  - { model: mock-tools, provider: mock-anthropic }\n"
    "  - { model: mock-text, provider: mock-gemini }\n"
    "  - { model: mock-tools, provider: mock-gemini }\n"
    HARNESS_MOCK_DIALECT_ROUTES
    "  - { model: \"*@vertex\", provider: mock-vertex }\n"
    "  - { model: \"*@vertex-anthropic\", provider: mock-vertex-anthropic }\n"
    "  - { model: \"*@azure\", provider: mock-azure }\n"
    "  - { model: \"*@bedrock\", provider: mock-bedrock }\n"
    "  - { model: \"*@bedrock-anthropic\", provider: mock-bedrock-anthropic }\n";
#define SDK_CLOUDS "SLUICE_SDK_CLOUDS=vertex,vertex-anthropic,azure,bedrock,bedrock-anthropic"
//  Bedrock's keys: the ingest signs with them, the mock checks with them.
#define SDK_AWS_KEY_ID "AKIDEXAMPLESDK"
#define SDK_AWS_SECRET "sdk-secret-access-key"
//  Entra ID's app: the ingest trades its secret at the mock for tokens.
#define SDK_AZURE_TENANT "sdk-tenant.onmicrosoft.com"
#define SDK_AZURE_CLIENT "sdk-app"
#define SDK_AZURE_SECRET "sdk-client-secret"

//  The routes with @KEY@ replaced by a service account's key file for
//  pair, whose token_uri is the mock's /token on port; its path in path.
static char *
s_cloud_routes (const jwt_pair_t *pair, int port, char *path, size_t size)
{
    char uri [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", port);
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s}", "type", "service_account", "private_key", pair->private_pem,
                             "client_email", "sdk@p1.iam.gserviceaccount.com", "token_uri", uri);
    snprintf (path, size, "/tmp/sluice-sdk-gcp-XXXXXX");
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
    static char routes [sizeof s_routes + 1024];
    const char *at = s_routes;
    size_t n = 0;
    for (const char *k; (k = strstr (at, "@KEY@")); at = k + strlen ("@KEY@"))
        n += (size_t) snprintf (routes + n, sizeof routes - n, "%.*s%s", (int) (k - at), at, path);
    snprintf (routes + n, sizeof routes - n, "%s", at);
    return routes;
}

//  The stack's policy: the default policy's rule for every agent's shell
//  tool, a slow LLM judge and a terminate rule (tests/agents/policy.yaml).
static char *
s_read_policy (void)
{
    FILE *f = fopen (SDK_POLICY, "r");
    cr_assert_not_null (f, "%s is readable", SDK_POLICY);
    static char text [16384];
    size_t n = fread (text, 1, sizeof text - 1, f);
    fclose (f);
    cr_assert_lt (n, sizeof text - 1);
    text [n] = 0;
    return text;
}

Test (sdk, official_sdks_against_the_stack, .timeout = 240)
{
    s_require_packages ();
    const char *dir = getenv ("SLUICE_CORPUS");
    char corpus [PATH_MAX] = "";
    if (realpath (dir && *dir ? dir : SDK_CORPUS_DEFAULT, corpus) == NULL)
        corpus [0] = 0;
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    int port = harness_free_port ();
    char port_text [16], key [64];
    snprintf (port_text, sizeof port_text, "%d", port);
    const char *routes = s_cloud_routes (&pair, port, key, sizeof key);
    //  Bedrock's requests are signed by the ingest and checked by the mock
    //  (both read the environment the stack inherits).
    unsetenv ("AWS_SESSION_TOKEN");
    unsetenv ("AWS_BEARER_TOKEN_BEDROCK");
    unsetenv ("AWS_ROLE_ARN");
    unsetenv ("SLUICE_MOCK_AWS_SESSION_TOKEN");
    setenv ("SLUICE_MOCK_AWS_ACCESS_KEY_ID", SDK_AWS_KEY_ID, 1);
    setenv ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", SDK_AWS_SECRET, 1);
    setenv ("AWS_ACCESS_KEY_ID", SDK_AWS_KEY_ID, 1);
    setenv ("AWS_SECRET_ACCESS_KEY", SDK_AWS_SECRET, 1);
    //  Azure OpenAI's calls carry Entra ID tokens the mock issued.
    char authority [64];
    snprintf (authority, sizeof authority, "http://127.0.0.1:%d", port);
    unsetenv ("AZURE_FEDERATED_TOKEN_FILE");
    setenv ("AZURE_AUTHORITY_HOST", authority, 1);
    setenv ("AZURE_TENANT_ID", SDK_AZURE_TENANT, 1);
    setenv ("AZURE_CLIENT_ID", SDK_AZURE_CLIENT, 1);
    setenv ("AZURE_CLIENT_SECRET", SDK_AZURE_SECRET, 1);
    setenv ("SLUICE_MOCK_AZURE_CLIENT_SECRET", SDK_AZURE_SECRET, 1);
    char record [64];
    snprintf (record, sizeof record, "/tmp/sluice-sdk-record-XXXXXX");
    int fd = mkstemp (record);
    cr_assert_geq (fd, 0);
    close (fd);
    const char *mock_args [] = { "--port", port_text, "--gcp-key-file", key, "--record", record,
                                 "--azure-tenant-id", SDK_AZURE_TENANT, "--azure-client-id", SDK_AZURE_CLIENT,
                                 "--replay-dir", corpus, NULL };
    if (!corpus [0])
        mock_args [10] = NULL;
    //  Keep-alives every half second: a held call (4.5 s) sees several.
    const char *judge_args [] = { "--keepalive-ms", "500", NULL };
    stack_opts_t opts = { .policy_text = s_read_policy (), .mock_delay_ms = 1, .routes_text = routes,
                          .mock_args = mock_args, .judge_args = judge_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    cr_assert_eq (s->mock_port, port, "the mock on the port its key file names");
    cr_expect (proc_wait_log (s->mock, "aws_signatures=checked", NULL, NULL, 0, 20000),
               "the mock checks Bedrock's signatures");
    char openai [128], anthropic [128], gemini [128], recorded [PATH_MAX + 32], log [512];
    snprintf (openai, sizeof openai, "SLUICE_OPENAI_BASE_URL=http://127.0.0.1:%d/v1", s->http_port);
    snprintf (anthropic, sizeof anthropic, "SLUICE_ANTHROPIC_BASE_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (gemini, sizeof gemini, "SLUICE_GEMINI_BASE_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (recorded, sizeof recorded, "SLUICE_SDK_CORPUS=%s", corpus);
    snprintf (log, sizeof log, "%s/sdk.log", s->dir);
    if (!corpus [0])
        fprintf (stderr, "sdk: no recorded streams (%s): the recorded-stream tests are skipped\n",
                 dir && *dir ? dir : SDK_CORPUS_DEFAULT);
    const char *env [] = { openai, anthropic, gemini, recorded, SDK_CLOUDS, NULL };
    cr_expect (s_run_node (SDK_DIR, env, log), "every SDK test passed");
    //  The clouds' tests reached the clouds' paths, Vertex AI's with the
    //  tokens of the mock's token endpoint (one per provider).
    sl_buf_t seen = { 0 };
    cr_assert (harness_read (record, &seen));
    cr_expect (strstr (sl_buf_cstr (&seen), "/publishers/google/models/mock-tools@vertex:streamGenerateContent"),
               "Gemini on Vertex AI reached");
    cr_expect (strstr (sl_buf_cstr (&seen), "/publishers/anthropic/models/mock-tools@vertex-anthropic:streamRawPredict"),
               "Claude on Vertex AI reached");
    cr_expect (strstr (sl_buf_cstr (&seen), "/openai/v1/chat/completions\t"), "Azure OpenAI reached");
    //  Bedrock's (the model id in the path, as the mock's server decodes
    //  it), every request signed, or the mock would have refused it.
    cr_expect (strstr (sl_buf_cstr (&seen), "/model/mock-tools@bedrock/converse-stream\t"),
               "Converse on Bedrock reached");
    cr_expect (strstr (sl_buf_cstr (&seen),
                       "/model/mock-tools@bedrock-anthropic/invoke-with-response-stream\t"),
               "Claude on Bedrock reached");
    cr_expect_eq (metric_value (s->mock_port, "mock_gcp_tokens_issued_total"), 2);
    cr_expect_eq (metric_value (s->mock_port, "mock_entra_tokens_issued_total"), 1,
                  "Azure OpenAI's calls with Entra ID's token");
    sl_buf_free (&seen);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
    unlink (key);
    jwt_fixture_free (&pair);
}

//  Render a hand-made judged stream for a dialect into dir/<name>.
static void
s_fixture (const char *dir, const char *name, int dialect, bool fail)
{
    driver_t d;
    driver_start (&d, dialect, SL_F_STREAM | SL_F_USAGE);
    if (fail) {
        driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
        sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
        m.text = sl_str ("partial");
        driver_feed (&d, m);
        sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
        err.code = sl_str ("overloaded_error");
        err.message = sl_str ("the upstream went away");
        driver_feed (&d, err);
        driver_end (&d);
    }
    else
        driver_full_response (&d, dialect == SL_DIALECT_ANTHROPIC ? "tool_use"
                                : dialect == SL_DIALECT_OPENAI ? "tool_calls" : NULL);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s: every event legal", name);
    char path [512];
    snprintf (path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (driver_bytes (&d), f);
    fclose (f);
    driver_stop (&d);
}

Test (sdk, emitter_renderings_read_by_each_sdk, .timeout = 240)
{
    s_require_packages ();
    char dir [] = "/tmp/sluice-sdk-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    const struct { const char *name; int dialect; } kinds [] = {
        { "openai", SL_DIALECT_OPENAI }, { "anthropic", SL_DIALECT_ANTHROPIC },
        { "responses", SL_DIALECT_RESPONSES }, { "gemini", SL_DIALECT_GEMINI },
    };
    char name [64], path [512];
    for (int i = 0; i < 4; i++) {
        snprintf (name, sizeof name, "%s-full.sse", kinds [i].name);
        s_fixture (dir, name, kinds [i].dialect, false);
        snprintf (name, sizeof name, "%s-error.sse", kinds [i].name);
        s_fixture (dir, name, kinds [i].dialect, true);
    }
    char env_dir [600], log [600];
    snprintf (env_dir, sizeof env_dir, "SLUICE_SDK_FIXTURES=%s", dir);
    snprintf (log, sizeof log, "%s/sdk.log", dir);
    const char *env [] = { env_dir, NULL };
    //  Anthropic's server tools, redacted thinking and stop sequences.
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
    driver_server_tools_response (&d);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0);
    snprintf (path, sizeof path, "%s/anthropic-server.sse", dir);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (driver_bytes (&d), f);
    fclose (f);
    driver_stop (&d);
    cr_expect (s_run_node (SDK_DIR "/render", env, log), "every SDK read the renderings as expected");
    unlink (path);
    for (int i = 0; i < 4; i++) {
        snprintf (path, sizeof path, "%s/%s-full.sse", dir, kinds [i].name);
        unlink (path);
        snprintf (path, sizeof path, "%s/%s-error.sse", dir, kinds [i].name);
        unlink (path);
    }
    rmdir (dir);
}

//  A key over its rate: each SDK reports the 429 as a rate limit.
Test (sdk, each_sdk_reports_a_limit_as_a_rate_limit, .timeout = 240)
{
    s_require_packages ();
    char dir [] = "/tmp/sluice-sdk-keys-XXXXXX", path [64], keys [4096] = "keys:\n", list [256] = "";
    cr_assert_not_null (mkdtemp (dir));
    const char *kinds [] = { "openai", "responses", "anthropic", "gemini" };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds [0]; i++) {
        char id [32], key [48];
        snprintf (id, sizeof id, "sdk-%s", kinds [i]);
        snprintf (key, sizeof key, "sk-sdk-limited-%s", kinds [i]);
        keyfile_entry (keys, sizeof keys, id, key, "sdk", kinds [i], "    limits: {rpm: 1}\n");
        size_t n = strlen (list);
        snprintf (list + n, sizeof list - n, "%s%s", i ? "," : "", key);
    }
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    const char *gateway_args [] = { "--keys-file", path, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .routes_text = s_routes, .gateway_args = gateway_args });
    cr_assert_not_null (s, "the stack came up");
    char openai [128], anthropic [128], gemini [128], limited [300], log [512];
    snprintf (openai, sizeof openai, "SLUICE_OPENAI_BASE_URL=http://127.0.0.1:%d/v1", s->http_port);
    snprintf (anthropic, sizeof anthropic, "SLUICE_ANTHROPIC_BASE_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (gemini, sizeof gemini, "SLUICE_GEMINI_BASE_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (limited, sizeof limited, "SLUICE_LIMITED_KEYS=%s", list);
    snprintf (log, sizeof log, "%s/sdk-limits.log", s->dir);
    const char *env [] = { openai, anthropic, gemini, limited, NULL };
    cr_expect (s_run_node (SDK_DIR "/limits", env, log), "every SDK reported the rate limit");
    cr_expect_eq (stack_stop (s), 0);
    unlink (path);
    rmdir (dir);
}
