/*  Integration tests: sluice's cloud libraries against AWS's and Google's
    own implementations (tests/cloud, npm, pinned; make cloud-deps):

    - the event stream: the frames the AWS SDK's codec
      (@smithy/eventstream-codec) writes are byte for byte those
      sl_evstream writes for the same messages, sl_evstream decodes them,
      and the SDK decodes sl_evstream's;
    - SigV4: the same Bedrock requests (real model ids, an inference
      profile ARN, session credentials, a query) signed by the AWS SDK's
      signer (@smithy/signature-v4) and by sl_sigv4 carry the same
      headers, Authorization among them, and sl_sigv4_verify takes the
      SDK's;
    - Google's grant: the assertion google-auth-library signs for a key
      has the header and claims of sl_gcpkey's, both verify with the key,
      and the library's own verifier takes sluice's (and refuses one
      signed with another key);
    - the requests: what sluice sends to Claude and Gemini on Vertex AI
      and to Azure OpenAI is what @anthropic-ai/vertex-sdk, @google/genai
      in Vertex mode and openai's AzureOpenAI send for the same call
      (method, path, query, headers, body), both captured by one local
      server (requests.mjs), which is also the token endpoint of the key
      file sluice's Vertex AI providers use;
    - Bedrock (bedrock.mjs): @aws-sdk/client-bedrock-runtime reads the
      mock's ConverseStream and InvokeModelWithResponseStream, signed and
      checked, every event decoded; and sluice's requests to Converse and
      Claude on Bedrock are the SDK's for the same conversation (method,
      path, credential scope, body), the signed headers differing only as
      bedrock.mjs names;
    - Entra ID (identity.mjs): the token requests sl_aztoken makes for a
      client secret and for workload identity are @azure/identity's
      ClientSecretCredential's and WorkloadIdentityCredential's (method,
      path, content type, the form's OAuth fields), and @azure/identity
      takes a token from the embedded mock's token endpoint, and reads
      its refusal of a wrong secret.

    Skipped, saying why, when node or the packages are missing. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <jwt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_aztoken.h"
#include "common/cloud/sl_evstream.h"
#include "common/cloud/sl_gcpkey.h"
#include "common/cloud/sl_sigv4.h"
#include "tests/integration/harness.h"
#include "tests/jwt_fixture.h"

#define CLOUD_DIR "tests/cloud"
#define NODE_TIMEOUT "60"

static void
s_skip_without_node (void)
{
    if (access (CLOUD_DIR "/node_modules/@smithy/signature-v4/package.json", R_OK) != 0
    ||  access (CLOUD_DIR "/node_modules/@smithy/eventstream-codec/package.json", R_OK) != 0
    ||  access (CLOUD_DIR "/node_modules/google-auth-library/package.json", R_OK) != 0)
        cr_skip_test ("the reference packages are not installed in " CLOUD_DIR "/node_modules "
                      "(make cloud-deps; it needs npm and the npm registry)");
    if (system ("node --version > /dev/null 2>&1") != 0)
        cr_skip_test ("node is not installed (make sdk-deps installs Debian's nodejs and npm)");
}

//  Run a script of tests/cloud (bounded in time); its output into out.
static void
s_node (const char *script, const char *args, sl_buf_t *out)
{
    char cmd [1024];
    snprintf (cmd, sizeof cmd, "timeout " NODE_TIMEOUT " node " CLOUD_DIR "/%s %s", script, args);
    FILE *p = popen (cmd, "r");
    cr_assert_not_null (p);
    char chunk [4096];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, p)) > 0)
        sl_buf_append (out, chunk, n);
    cr_assert_eq (pclose (p), 0, "%s failed: %s", cmd, sl_buf_cstr (out));
}

static void
s_tmpfile (char *path, size_t size, const char *what)
{
    snprintf (path, size, "/tmp/sluice-cloud-%s-XXXXXX", what);
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
}

static void
s_write (const char *path, const void *data, size_t len)
{
    FILE *f = fopen (path, "wb");
    cr_assert_not_null (f);
    cr_assert_eq (fwrite (data, 1, len, f), len);
    fclose (f);
}

static void
s_read (const char *path, sl_buf_t *out)
{
    FILE *f = fopen (path, "rb");
    cr_assert_not_null (f);
    char chunk [4096];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
        sl_buf_append (out, chunk, n);
    fclose (f);
}

// ---------------------------------------------------------------------------
// The event stream

//  The messages of tests/cloud/eventstream.mjs, framed by sl_evstream.
static void
s_encode_messages (sl_buf_t *out)
{
    cr_assert_eq (sl_evstream_encode_event (out, "messageStart", SL_STR_LIT ("{\"role\":\"assistant\"}")), 0);
    cr_assert_eq (sl_evstream_encode_event (out, "contentBlockDelta",
                  SL_STR_LIT ("{\"contentBlockIndex\":0,\"delta\":{\"text\":\"h\xc3\xa9llo \xe2\x9c\x93\"}}")), 0);
    cr_assert_eq (sl_evstream_encode_exception (out, "throttlingException",
                  SL_STR_LIT ("{\"message\":\"Too many requests, please wait before trying again.\"}")), 0);
    static const uint8_t uuid [16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    sl_evstream_header_t every [] = {
        { .name = SL_STR_LIT ("t"), .type = SL_EVH_TRUE },
        { .name = SL_STR_LIT ("f"), .type = SL_EVH_FALSE },
        { .name = SL_STR_LIT ("b"), .type = SL_EVH_BYTE, .i = -5 },
        { .name = SL_STR_LIT ("s"), .type = SL_EVH_SHORT, .i = -300 },
        { .name = SL_STR_LIT ("i"), .type = SL_EVH_INT, .i = -70000 },
        { .name = SL_STR_LIT ("l"), .type = SL_EVH_LONG, .i = -5000000000LL },
        { .name = SL_STR_LIT ("y"), .type = SL_EVH_BYTES, .bytes = { "\0\1\2", 3 } },
        { .name = SL_STR_LIT ("str"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("value") },
        { .name = SL_STR_LIT ("ts"), .type = SL_EVH_TIMESTAMP, .i = 1700000000123LL },
        { .name = SL_STR_LIT ("u"), .type = SL_EVH_UUID, .bytes = { (const char *) uuid, 16 } },
    };
    cr_assert_eq (sl_evstream_encode (out, every, sizeof every / sizeof every [0], SL_STR_LIT ("payload")), 0);
}

//  What the SDK prints for those messages (eventstream.mjs decode).
static const char *s_sdk_decoded =
    "{\"headers\":[[\":event-type\",\"string\",\"messageStart\"],[\":content-type\",\"string\",\"application/json\"],"
    "[\":message-type\",\"string\",\"event\"]],\"body\":\"{\\\"role\\\":\\\"assistant\\\"}\"}\n"
    "{\"headers\":[[\":event-type\",\"string\",\"contentBlockDelta\"],[\":content-type\",\"string\",\"application/json\"],"
    "[\":message-type\",\"string\",\"event\"]],\"body\":\"{\\\"contentBlockIndex\\\":0,\\\"delta\\\":{\\\"text\\\":"
    "\\\"h\xc3\xa9llo \xe2\x9c\x93\\\"}}\"}\n"
    "{\"headers\":[[\":exception-type\",\"string\",\"throttlingException\"],[\":content-type\",\"string\",\"application/json\"],"
    "[\":message-type\",\"string\",\"exception\"]],\"body\":\"{\\\"message\\\":\\\"Too many requests, please wait before "
    "trying again.\\\"}\"}\n"
    "{\"headers\":[[\"t\",\"boolean\",true],[\"f\",\"boolean\",false],[\"b\",\"byte\",-5],[\"s\",\"short\",-300],"
    "[\"i\",\"integer\",-70000],[\"l\",\"long\",\"-5000000000\"],[\"y\",\"binary\",\"000102\"],[\"str\",\"string\",\"value\"],"
    "[\"ts\",\"timestamp\",1700000000123],[\"u\",\"uuid\",\"01020304-0506-0708-090a-0b0c0d0e0f10\"]],\"body\":\"payload\"}\n";

typedef struct {
    int count;
    sl_buf_t log;
} s_seen_t;

static int
s_on_msg (void *arg, const sl_evstream_msg_t *msg)
{
    s_seen_t *seen = arg;
    seen->count++;
    sl_buf_printf (&seen->log, "%.*s|%.*s|%.*s|%zu|%.*s\n", (int) msg->message_type.len,
                   msg->message_type.ptr ? msg->message_type.ptr : "", (int) msg->event_type.len,
                   msg->event_type.ptr ? msg->event_type.ptr : "", (int) msg->exception_type.len,
                   msg->exception_type.ptr ? msg->exception_type.ptr : "", msg->header_count,
                   (int) msg->payload.len, msg->payload.ptr);
    return 0;
}

Test (cloud, eventstream_the_sdks_frames_are_ours)
{
    s_skip_without_node ();
    char path [64];
    s_tmpfile (path, sizeof path, "sdk");
    sl_buf_t out = { 0 }, sdk = { 0 }, ours = { 0 };
    char args [128];
    snprintf (args, sizeof args, "encode %s", path);
    s_node ("eventstream.mjs", args, &out);
    s_read (path, &sdk);
    unlink (path);
    s_encode_messages (&ours);
    cr_assert_eq (sdk.len, ours.len, "the SDK wrote %zu bytes, sl_evstream %zu", sdk.len, ours.len);
    cr_expect_eq (memcmp (sdk.data, ours.data, sdk.len), 0, "the same bytes");
    //  Decoded in pieces of 7 bytes.
    sl_evstream_t *d = sl_evstream_new (0);
    s_seen_t seen = { 0 };
    for (size_t at = 0; at < sdk.len; at += 7)
        cr_assert_eq (sl_evstream_feed (d, sdk.data + at, sdk.len - at < 7 ? sdk.len - at : 7, s_on_msg, &seen), 0,
                      "%s", sl_evstream_error (d));
    cr_expect_eq (sl_evstream_finish (d), 0);
    cr_expect_str_eq (sl_buf_cstr (&seen.log),
                      "event|messageStart||3|{\"role\":\"assistant\"}\n"
                      "event|contentBlockDelta||3|{\"contentBlockIndex\":0,\"delta\":{\"text\":\"h\xc3\xa9llo \xe2\x9c\x93\"}}\n"
                      "exception||throttlingException|3|{\"message\":\"Too many requests, please wait before trying again.\"}\n"
                      "|||10|payload\n");
    sl_evstream_destroy (&d);
    sl_buf_free (&seen.log);
    sl_buf_free (&out);
    sl_buf_free (&sdk);
    sl_buf_free (&ours);
}

Test (cloud, eventstream_the_sdk_decodes_ours)
{
    s_skip_without_node ();
    char path [64];
    s_tmpfile (path, sizeof path, "ours");
    sl_buf_t ours = { 0 }, out = { 0 };
    s_encode_messages (&ours);
    s_write (path, ours.data, ours.len);
    char args [128];
    snprintf (args, sizeof args, "decode %s", path);
    s_node ("eventstream.mjs", args, &out);
    unlink (path);
    cr_expect_str_eq (sl_buf_cstr (&out), s_sdk_decoded);
    //  A frame of ours with a CRC broken: the SDK refuses it too.
    ours.data [ours.len - 1] ^= 1;
    s_write (path, ours.data, ours.len);
    char cmd [256];
    snprintf (cmd, sizeof cmd, "timeout " NODE_TIMEOUT " node " CLOUD_DIR "/eventstream.mjs decode %s > /dev/null 2>&1", path);
    cr_expect_neq (system (cmd), 0, "the SDK checks the message CRC");
    unlink (path);
    sl_buf_free (&ours);
    sl_buf_free (&out);
}

// ---------------------------------------------------------------------------
// SigV4

typedef struct {
    const char *name;
    const char *path;                   //  as sent
    const char *query;                  //  as sent; the SDK gets it decoded
    const char *query_json;             //  the SDK's query object
    const char *token;
    const char *method;
} s_sig_case_t;

static const s_sig_case_t s_sig_cases [] = {
    { "converse-stream with a model id", "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream",
      NULL, "{}", NULL, "POST" },
    { "an inference profile ARN",
      "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F"
      "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream", NULL, "{}", NULL, "POST" },
    { "session credentials", "/model/amazon.nova-pro-v1%3A0/converse-stream", NULL, "{}",
      "IQoJb3JpZ2luX2VjEPT//////////wEaCXVzLWVhc3QtMSJHMEUCIQ+session/token=", "POST" },
    { "a query", "/foundation-models", "byProvider=anthropic&byOutputModality=TEXT",
      "{\"byProvider\":\"anthropic\",\"byOutputModality\":\"TEXT\"}", NULL, "GET" },
};

Test (cloud, sigv4_the_same_headers_as_the_aws_sdk)
{
    s_skip_without_node ();
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"Hello \xe2\x9c\x93\"}]}],"
                       "\"inferenceConfig\":{\"maxTokens\":512}}";
    for (size_t k = 0; k < sizeof s_sig_cases / sizeof s_sig_cases [0]; k++) {
        const s_sig_case_t *c = &s_sig_cases [k];
        const char *req_body = strcmp (c->method, "GET") ? body : "";
        time_t now = 1764633600 + (time_t) k * 977;         //  2025-12-02, and a little later each
        sl_sigv4_creds_t creds = { "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", c->token };
        sl_sigv4_params_t params = { "us-east-1", "bedrock", now, true };
        sl_sigv4_header_t headers [] = {
            { "Content-Type", "application/json" }, { "Accept", "application/vnd.amazon.eventstream" },
        };
        sl_sigv4_request_t req = { c->method, "bedrock-runtime.us-east-1.amazonaws.com", c->path, c->query,
                                   headers, 2, sl_str (req_body) };
        sl_sigv4_signed_t sig;
        cr_assert_eq (sl_sigv4_sign (&creds, &params, &req, &sig, NULL), 0, "%s", c->name);
        //  Ours, as the SDK prints its own: lower-case names, sorted.
        sl_buf_t ours = { 0 };
        sl_buf_printf (&ours, "accept: application/vnd.amazon.eventstream\n");
        sl_buf_printf (&ours, "authorization: %s\n", sig.authorization);
        sl_buf_printf (&ours, "content-type: application/json\n");
        sl_buf_printf (&ours, "host: bedrock-runtime.us-east-1.amazonaws.com\n");
        sl_buf_printf (&ours, "x-amz-content-sha256: %s\n", sig.content_sha256);
        sl_buf_printf (&ours, "x-amz-date: %s\n", sig.amz_date);
        if (sig.security_token)
            sl_buf_printf (&ours, "x-amz-security-token: %s\n", sig.security_token);
        //  The SDK's.
        json_t *spec = json_pack ("{s:s, s:s, s:s?, s:s, s:s, s:I, s:s, s:s, s:s, s:o, s:{s:s, s:s}, s:s}",
                                  "accessKeyId", creds.access_key_id, "secretAccessKey", creds.secret_access_key,
                                  "sessionToken", c->token, "region", "us-east-1", "service", "bedrock",
                                  "time", (json_int_t) now, "method", c->method,
                                  "host", "bedrock-runtime.us-east-1.amazonaws.com", "path", c->path,
                                  "query", json_loads (c->query_json, 0, NULL),
                                  "headers", "content-type", "application/json",
                                  "accept", "application/vnd.amazon.eventstream", "body", req_body);
        cr_assert_not_null (spec);
        char path [64];
        s_tmpfile (path, sizeof path, "sig");
        cr_assert_eq (json_dump_file (spec, path, 0), 0);
        json_decref (spec);
        sl_buf_t sdk = { 0 };
        s_node ("sigv4.mjs", path, &sdk);
        unlink (path);
        cr_expect_str_eq (sl_buf_cstr (&ours), sl_buf_cstr (&sdk), "%s", c->name);
        //  And the checker takes the SDK's signature.
        const char *auth = strstr (sl_buf_cstr (&sdk), "authorization: ");
        cr_assert_not_null (auth);
        char sdk_auth [512];
        snprintf (sdk_auth, sizeof sdk_auth, "%.*s", (int) strcspn (auth + 15, "\n"), auth + 15);
        sl_sigv4_header_t arrived [] = {
            { "Host", "bedrock-runtime.us-east-1.amazonaws.com" }, headers [0], headers [1],
            { "X-Amz-Date", sig.amz_date }, { "X-Amz-Content-Sha256", sig.content_sha256 },
            { "Authorization", sdk_auth }, { "X-Amz-Security-Token", c->token },
        };
        sl_sigv4_request_t in = { c->method, NULL, c->path, c->query, arrived, c->token ? 7 : 6, sl_str (req_body) };
        char why [200];
        cr_expect_eq (sl_sigv4_verify (&creds, "us-east-1", "bedrock", &in, now, 0, why, sizeof why), 0,
                      "%s: %s", c->name, why);
        sl_sigv4_signed_clear (&sig);
        sl_buf_free (&ours);
        sl_buf_free (&sdk);
    }
}

// ---------------------------------------------------------------------------
// Google's grant

//  The header and the claims of a JWT, decoded.
static void
s_jwt_parts (const char *jwt, json_t **header, json_t **claims)
{
    const char *dot1 = strchr (jwt, '.');
    cr_assert_not_null (dot1);
    const char *dot2 = strchr (dot1 + 1, '.');
    cr_assert_not_null (dot2);
    const char *parts [2][2] = { { jwt, dot1 }, { dot1 + 1, dot2 } };
    json_t **out [2] = { header, claims };
    for (int i = 0; i < 2; i++) {
        unsigned char bin [2048];
        size_t len = 0;
        cr_assert_eq (sodium_base642bin (bin, sizeof bin, parts [i][0], (size_t) (parts [i][1] - parts [i][0]),
                                         NULL, &len, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING), 0);
        *out [i] = json_loadb ((const char *) bin, len, 0, NULL);
        cr_assert_not_null (*out [i]);
    }
}

Test (cloud, google_grant_as_google_auth_library_signs_it)
{
    s_skip_without_node ();
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    const char *scope = "https://www.googleapis.com/auth/cloud-platform";
    //  A key as Google's console writes it (token_uri is Google's: the
    //  library always signs for that audience).
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "service_account", "project_id", "project-1",
                             "private_key_id", "0123abcd", "private_key", pair.private_pem,
                             "client_email", "sluice@project-1.iam.gserviceaccount.com",
                             "token_uri", "https://oauth2.googleapis.com/token");
    char path [64];
    s_tmpfile (path, sizeof path, "key");
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
    char args [256];
    snprintf (args, sizeof args, "%s %s", path, scope);
    sl_buf_t out = { 0 };
    s_node ("grant.mjs", args, &out);
    char *theirs = strndup (out.data, strcspn (out.data, "\n"));
    char why [200];
    sl_gcpkey_t *gk = sl_gcpkey_load (path, why, sizeof why);
    cr_assert_not_null (gk, "%s", why);
    unlink (path);
    json_t *th, *tc;
    s_jwt_parts (theirs, &th, &tc);
    char *ours = sl_gcpkey_assertion (gk, scope, (time_t) json_integer_value (json_object_get (tc, "iat")), why, sizeof why);
    cr_assert_not_null (ours, "%s", why);
    json_t *oh, *oc;
    s_jwt_parts (ours, &oh, &oc);
    //  The claims: the same names, the same values (the same iat given).
    cr_expect (json_equal (oc, tc), "claims: ours %s, google-auth-library's %s",
               json_dumps (oc, JSON_SORT_KEYS), json_dumps (tc, JSON_SORT_KEYS));
    cr_expect_eq (json_integer_value (json_object_get (tc, "exp")) - json_integer_value (json_object_get (tc, "iat")),
                  SL_GCPKEY_LIFETIME_S);
    //  The header: alg RS256 in both; libjwt adds typ JWT, which Google accepts.
    cr_expect_str_eq (json_string_value (json_object_get (th, "alg")), "RS256");
    cr_expect_str_eq (json_string_value (json_object_get (oh, "alg")), "RS256");
    json_object_del (oh, "typ");
    cr_expect (json_equal (oh, th), "header: ours %s, google-auth-library's %s", json_dumps (oh, 0), json_dumps (th, 0));
    //  RS256 is deterministic: with the same header and claims, the same
    //  signature; here both verify with the key.
    jwt_t *jwt = NULL;
    cr_expect_eq (jwt_decode (&jwt, theirs, (const unsigned char *) pair.public_pem, (int) strlen (pair.public_pem)), 0);
    jwt_free (jwt);
    cr_expect_eq (jwt_decode (&jwt, ours, (const unsigned char *) pair.public_pem, (int) strlen (pair.public_pem)), 0);
    jwt_free (jwt);
    json_decref (th);
    json_decref (tc);
    json_decref (oh);
    json_decref (oc);
    free (ours);
    free (theirs);
    sl_gcpkey_destroy (&gk);
    sl_buf_free (&out);
    jwt_fixture_free (&pair);
}

//  sluice's grant through google-auth-library's own verifier, and one
//  signed with another key refused by it.
Test (cloud, google_grant_ours_passes_google_auth_librarys_checks)
{
    s_skip_without_node ();
    jwt_pair_t pair, other;
    jwt_fixture_make (&pair, true);
    jwt_fixture_make (&other, true);
    char path [64], other_path [64];
    const jwt_pair_t *pairs [2] = { &pair, &other };
    char *paths [2] = { path, other_path };
    for (int i = 0; i < 2; i++) {
        json_t *key = json_pack ("{s:s, s:s, s:s, s:s}", "type", "service_account", "private_key",
                                 pairs [i]->private_pem, "client_email", "sluice@project-1.iam.gserviceaccount.com",
                                 "token_uri", "https://oauth2.googleapis.com/token");
        s_tmpfile (paths [i], sizeof path, "key");
        cr_assert_eq (json_dump_file (key, paths [i], 0), 0);
        json_decref (key);
    }
    char why [200];
    const char *expect [2] = { "verified\n", "refused: Invalid token signature\n" };
    for (int i = 0; i < 2; i++) {
        //  Signed with the second key, checked against the first.
        sl_gcpkey_t *gk = sl_gcpkey_load (paths [i], why, sizeof why);
        cr_assert_not_null (gk, "%s", why);
        char *ours = sl_gcpkey_assertion (gk, "https://www.googleapis.com/auth/cloud-platform", time (NULL), why,
                                          sizeof why);
        cr_assert_not_null (ours, "%s", why);
        char args [4096];
        snprintf (args, sizeof args, "verify %s %s", path, ours);
        sl_buf_t out = { 0 };
        s_node ("grant.mjs", args, &out);
        cr_expect_str_eq (sl_buf_cstr (&out), expect [i]);
        sl_buf_free (&out);
        free (ours);
        sl_gcpkey_destroy (&gk);
    }
    unlink (path);
    unlink (other_path);
    jwt_fixture_free (&pair);
    jwt_fixture_free (&other);
}

//  The requests

Test (cloud, requests_as_the_clouds_sdks_send_them, .timeout = 180)
{
    s_skip_without_node ();
    if (access (CLOUD_DIR "/node_modules/@anthropic-ai/vertex-sdk/package.json", R_OK) != 0
    ||  access (CLOUD_DIR "/node_modules/@google/genai/package.json", R_OK) != 0
    ||  access (CLOUD_DIR "/node_modules/openai/package.json", R_OK) != 0)
        cr_skip_test ("the SDKs are not installed in " CLOUD_DIR "/node_modules (make cloud-deps)");
    int port = harness_free_port ();
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    char uri [64], key [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", port);
    json_t *file = json_pack ("{s:s, s:s, s:s, s:s}", "type", "service_account", "private_key", pair.private_pem,
                              "client_email", "sluice@p1.iam.gserviceaccount.com", "token_uri", uri);
    s_tmpfile (key, sizeof key, "key");
    cr_assert_eq (json_dump_file (file, key, 0), 0);
    json_decref (file);
    setenv ("SLUICE_TEST_AZURE_KEY", "azure-reference-key", 1);
    unsetenv ("GOOGLE_APPLICATION_CREDENTIALS");
    char routes [2048];
    snprintf (routes, sizeof routes,
              "providers:\n"
              "  - { name: vxa, dialect: vertex-anthropic, base_url: \"http://127.0.0.1:%d\", region: us-east5,\n"
              "      project: p1, credentials_file: \"%s\" }\n"
              "  - { name: vx, dialect: vertex, base_url: \"http://127.0.0.1:%d\", region: us-east5, project: p1,\n"
              "      credentials_file: \"%s\" }\n"
              "  - { name: az, dialect: azure, base_url: \"http://127.0.0.1:%d\", api_version: \"2024-10-21\",\n"
              "      deployments: { gpt-4o: prod-gpt4o }, key_env: SLUICE_TEST_AZURE_KEY }\n"
              "routes:\n"
              "  - { model: \"claude-*\", provider: vxa }\n"
              "  - { model: \"gemini-*\", provider: vx }\n"
              "  - { model: \"gpt-*\", provider: az }\n", port, key, port, key, port);
    //  No retries: the server refuses each call once it has it.
    const char *ingest_args [] = { "--max-retries", "0", NULL };
    stack_opts_t opts = { .routes_text = routes, .ingest_args = ingest_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    char args [128];
    snprintf (args, sizeof args, "http://127.0.0.1:%d %d", s->http_port, port);
    sl_buf_t out = { 0 };
    s_node ("requests.mjs", args, &out);
    json_t *pairs = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (pairs, "%s", sl_buf_cstr (&out));
    //  What was compared, read here too: a request of each, with the
    //  credential each API takes.
    json_t *vxa = json_object_get (json_object_get (pairs, "vertex-anthropic"), "sluice");
    cr_expect_str_eq (json_string_value (json_object_get (vxa, "path")),
                      "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"
                      "streamRawPredict");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (vxa, "headers"), "authorization")),
                      "Bearer ya29.reference-token");
    cr_expect_null (json_object_get (json_object_get (vxa, "body"), "model"));
    json_t *vx = json_object_get (json_object_get (pairs, "vertex"), "sluice");
    cr_expect_str_eq (json_string_value (json_object_get (vx, "path")),
                      "/v1/projects/p1/locations/us-east5/publishers/google/models/gemini-2.5-flash:"
                      "streamGenerateContent");
    json_t *az = json_object_get (json_object_get (pairs, "azure"), "sluice");
    cr_expect_str_eq (json_string_value (json_object_get (az, "path")),
                      "/openai/deployments/prod-gpt4o/chat/completions");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (az, "headers"), "api-key")),
                      "azure-reference-key");
    json_decref (pairs);
    sl_buf_free (&out);
    cr_expect_eq (stack_stop (s), 0);
    unlink (key);
    jwt_fixture_free (&pair);
}

//  Amazon Bedrock's own client (bedrock.mjs)

#define BEDROCK_KEY_ID "AKIDEXAMPLECLOUD"
#define BEDROCK_SECRET "cloud-secret-access-key"
#define BEDROCK_MODEL "anthropic.claude-sonnet-4-5-20250929-v1:0"
#define MOCK_TEXT "Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at " \
                  "a time, so you can watch the proxy work."

static void
s_skip_without_bedrock_sdk (void)
{
    s_skip_without_node ();
    if (access (CLOUD_DIR "/node_modules/@aws-sdk/client-bedrock-runtime/package.json", R_OK) != 0
    ||  access (CLOUD_DIR "/node_modules/@anthropic-ai/sdk/package.json", R_OK) != 0
    ||  access (CLOUD_DIR "/node_modules/openai/package.json", R_OK) != 0)
        cr_skip_test ("the SDKs are not installed in " CLOUD_DIR "/node_modules (make cloud-deps)");
    const char *vars [] = { "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_ROLE_ARN", "AWS_PROFILE",
                            "AWS_WEB_IDENTITY_TOKEN_FILE", "SLUICE_MOCK_AWS_SESSION_TOKEN", NULL };
    for (const char **v = vars; *v; v++)
        unsetenv (*v);
    //  The SDK and the ingest sign with these, the mock checks with them.
    setenv ("AWS_ACCESS_KEY_ID", BEDROCK_KEY_ID, 1);
    setenv ("AWS_SECRET_ACCESS_KEY", BEDROCK_SECRET, 1);
    setenv ("SLUICE_MOCK_AWS_ACCESS_KEY_ID", BEDROCK_KEY_ID, 1);
    setenv ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", BEDROCK_SECRET, 1);
}

//  One stream the SDK read: its text, its calls' names and inputs in
//  order ("name input;"), its stop reason and its error's name.
static void
s_expect_read (json_t *all, const char *name, const char *text, const char *calls, const char *stop,
               const char *error)
{
    json_t *r = json_object_get (all, name);
    cr_assert_not_null (r, "%s read", name);
    cr_expect_str_eq (json_string_value (json_object_get (r, "text")), text, "%s: the text", name);
    char seen [512] = "";
    size_t n = 0, i;
    json_t *call;
    json_array_foreach (json_object_get (r, "tools"), i, call)
        n += (size_t) snprintf (seen + n, sizeof seen - n, "%s %s;",
                                json_string_value (json_object_get (call, "name")),
                                json_string_value (json_object_get (call, "input")));
    cr_expect_str_eq (seen, calls, "%s: the calls", name);
    json_t *j = json_object_get (r, "stopReason");
    cr_expect_str_eq (json_is_string (j) ? json_string_value (j) : "", stop, "%s: the stop reason", name);
    j = json_object_get (r, "error");
    cr_expect_str_eq (json_is_string (j) ? json_string_value (j) : "", error, "%s: the error", name);
    cr_expect_gt (json_array_size (json_object_get (r, "events")), 2, "%s: events decoded", name);
}

Test (cloud, bedrock_the_sdk_reads_the_mocks_event_streams, .timeout = 120)
{
    s_skip_without_bedrock_sdk ();
    stack_opts_t opts = { .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    cr_expect (proc_wait_log (s->mock, "aws_signatures=checked", NULL, NULL, 0, 20000),
               "the mock checks the SDK's signatures");
    char args [64];
    snprintf (args, sizeof args, "decode http://127.0.0.1:%d", s->mock_port);
    sl_buf_t out = { 0 };
    s_node ("bedrock.mjs", args, &out);
    json_t *all = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (all, "%s", sl_buf_cstr (&out));
    const char *tools = "get_weather {\"city\":\"Paris\"};run_shell {\"command\":\"rm -rf /\"};";
    const char *text = "Let me check the weather and tidy up.";
    s_expect_read (all, "converse/mock-text", MOCK_TEXT, "", "end_turn", "");
    s_expect_read (all, "converse/mock-tools", text, tools, "tool_use", "");
    s_expect_read (all, "converse/mock-error", "This answer will not", "", "", "ModelStreamErrorException");
    s_expect_read (all, "claude/mock-text", MOCK_TEXT, "", "end_turn", "");
    s_expect_read (all, "claude/mock-tools", text, tools, "tool_use", "");
    s_expect_read (all, "claude/mock-error", "This answer will not", "", "", "ModelStreamErrorException");
    //  Converse's usage, in its metadata event (the last).
    json_t *conv = json_object_get (all, "converse/mock-text");
    json_t *events = json_object_get (conv, "events");
    cr_expect_str_eq (json_string_value (json_array_get (events, json_array_size (events) - 1)), "metadata");
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (conv, "usage"), "input")), 12);
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (conv, "usage"), "output")), 30);
    json_decref (all);
    sl_buf_free (&out);
    cr_expect_eq (stack_stop (s), 0);
}

Test (cloud, bedrock_requests_as_the_aws_sdk_sends_them, .timeout = 180)
{
    s_skip_without_bedrock_sdk ();
    int port = harness_free_port ();
    char routes [1024];
    snprintf (routes, sizeof routes,
              "providers:\n"
              "  - { name: br, dialect: bedrock, base_url: \"http://127.0.0.1:%d\", region: us-west-2 }\n"
              "  - { name: bra, dialect: bedrock-anthropic, base_url: \"http://127.0.0.1:%d\", region: us-west-2 }\n"
              "routes:\n"
              "  - model: converse-claude\n"
              "    providers: [{ provider: br, model: \"%s\" }]\n"
              "  - model: claude-on-bedrock\n"
              "    providers: [{ provider: bra, model: \"%s\" }]\n", port, port, BEDROCK_MODEL, BEDROCK_MODEL);
    const char *ingest_args [] = { "--max-retries", "0", NULL };
    stack_opts_t opts = { .routes_text = routes, .ingest_args = ingest_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    char args [128];
    snprintf (args, sizeof args, "requests http://127.0.0.1:%d %d", s->http_port, port);
    sl_buf_t out = { 0 };
    s_node ("bedrock.mjs", args, &out);
    json_t *pairs = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (pairs, "%s", sl_buf_cstr (&out));
    //  The model id's ':' encoded once in the path sent (AWS's SDK and
    //  sluice alike; SigV4's canonical path encodes it again).
    json_t *br = json_object_get (json_object_get (pairs, "bedrock"), "sluice");
    cr_expect_str_eq (json_string_value (json_object_get (br, "path")),
                      "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream");
    cr_expect_str_eq (json_string_value (json_object_get (br, "scope")), "us-west-2/bedrock/aws4_request");
    json_t *bra = json_object_get (json_object_get (pairs, "bedrock-anthropic"), "sluice");
    cr_expect_str_eq (json_string_value (json_object_get (bra, "path")),
                      "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (bra, "body"), "anthropic_version")),
                      "bedrock-2023-05-31");
    json_decref (pairs);
    sl_buf_free (&out);
    cr_expect_eq (stack_stop (s), 0);
}

//  Entra ID: @azure/identity (identity.mjs)

#define ENTRA_TENANT "72f988bf-86f1-41af-91ab-2d7cd011db47"
#define ENTRA_CLIENT "0a1b2c3d-1111-2222-3333-0123456789ab"
#define ENTRA_SECRET "reference~secret.value"
#define ENTRA_POD_TOKEN "eyJhbGciOiJSUzI1NiJ9.pod-service-account.sig"
#define ENTRA_WAIT_MS 30000

static void
s_skip_without_azure_identity (void)
{
    s_skip_without_node ();
    if (access (CLOUD_DIR "/node_modules/@azure/identity/package.json", R_OK) != 0)
        cr_skip_test ("@azure/identity is not installed in " CLOUD_DIR "/node_modules (make cloud-deps)");
    if (system ("openssl version > /dev/null 2>&1") != 0)
        cr_skip_test ("openssl is not installed: the HTTPS authority @azure/identity needs has no certificate");
}

//  A self-signed certificate for 127.0.0.1 (MSAL talks to an authority
//  over HTTPS only) and its key, in dir.
static void
s_tls (const char *dir, char *cert, char *key, size_t size)
{
    snprintf (cert, size, "%s/cert.pem", dir);
    snprintf (key, size, "%s/key.pem", dir);
    char cmd [1024];
    snprintf (cmd, sizeof cmd, "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 1 "
              "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 > /dev/null 2>&1", key, cert);
    cr_assert_eq (system (cmd), 0, "a certificate made");
}

//  identity.mjs in the background, trusting cert, its output into out.
static pid_t
s_identity_start (const char *args, const char *cert, const char *out)
{
    pid_t pid = fork ();
    cr_assert_geq (pid, 0);
    if (pid == 0) {
        char cmd [2048], ca [600];
        snprintf (ca, sizeof ca, "NODE_EXTRA_CA_CERTS=%s", cert);
        putenv (ca);
        snprintf (cmd, sizeof cmd, "exec timeout " NODE_TIMEOUT " node " CLOUD_DIR "/identity.mjs %s > %s 2>&1",
                  args, out);
        execl ("/bin/sh", "sh", "-c", cmd, (char *) NULL);
        _exit (127);
    }
    return pid;
}

//  Its exit status (waited for at most ENTRA_WAIT_MS, killed past it).
static int
s_identity_wait (pid_t pid)
{
    int status = 0;
    for (int64_t end = zclock_mono () + ENTRA_WAIT_MS; zclock_mono () < end; zclock_sleep (50))
        if (waitpid (pid, &status, WNOHANG) == pid)
            return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
    kill (pid, SIGKILL);
    waitpid (pid, &status, 0);
    return -1;
}

typedef struct {
    int told;
    char error [300];
} s_told_t;

static void
s_on_told (void *arg, const char *error)
{
    s_told_t *t = arg;
    t->told++;
    snprintf (t->error, sizeof t->error, "%s", error ? error : "");
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    return ((s_told_t *) arg)->told ? -1 : 0;
}

static int
s_on_give_up (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  sl_aztoken's token for config, fetched as the ingest fetches it: its
//  request is what the server on authority sees.
static void
s_aztoken_fetch (const sl_aztoken_config_t *config)
{
    zloop_t *loop = zloop_new ();
    sl_curlm_t *curlm = sl_curlm_new (loop);
    char why [300];
    sl_aztoken_t *az = sl_aztoken_new (loop, curlm, config, NULL, why, sizeof why);
    cr_assert_not_null (az, "%s", why);
    const char *token = NULL;
    s_told_t told = { 0 };
    uint64_t id;
    if (sl_aztoken_get (az, &token, s_on_told, &told, &id) == 1) {
        int tick = zloop_timer (loop, 10, 0, s_on_tick, &told);
        int bound = zloop_timer (loop, ENTRA_WAIT_MS, 1, s_on_give_up, NULL);
        zloop_start (loop);
        zloop_timer_end (loop, tick);
        zloop_timer_end (loop, bound);
        cr_assert_eq (told.told, 1, "the token endpoint answered");
        cr_assert_str_eq (told.error, "");
        cr_assert_eq (sl_aztoken_get (az, &token, s_on_told, &told, &id), 0);
    }
    cr_expect_str_eq (token, "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.reference-token");
    sl_aztoken_destroy (&az);
    sl_curlm_destroy (&curlm);
    zloop_destroy (&loop);
}

Test (cloud, entra_token_requests_as_azure_identity_makes_them, .timeout = 120)
{
    s_skip_without_azure_identity ();
    char dir [64] = "/tmp/sluice-cloud-entra-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char cert [128], key [128], file [128], out [128];
    s_tls (dir, cert, key, sizeof cert);
    snprintf (file, sizeof file, "%s/azure-identity-token", dir);
    s_write (file, ENTRA_POD_TOKEN "\n", strlen (ENTRA_POD_TOKEN) + 1);
    snprintf (out, sizeof out, "%s/out", dir);
    int http_port = harness_free_port (), https_port = harness_free_port ();
    char args [512];
    snprintf (args, sizeof args, "capture %d %d %s %s %s", http_port, https_port, cert, key, file);
    pid_t node = s_identity_start (args, cert, out);
    sl_buf_t text = { 0 };
    for (int64_t end = zclock_mono () + ENTRA_WAIT_MS; zclock_mono () < end; zclock_sleep (50)) {
        sl_buf_reset (&text);
        if (harness_read (out, &text) && strstr (sl_buf_cstr (&text), "listening\n"))
            break;
    }
    cr_assert (strstr (sl_buf_cstr (&text), "listening\n") != NULL, "identity.mjs listens: %s", sl_buf_cstr (&text));
    //  sluice's two requests, as the ingest makes them, the variables the
    //  SDK reads read by sl_aztoken_config_from_env.
    char authority [64];
    snprintf (authority, sizeof authority, "http://127.0.0.1:%d/", http_port);
    setenv ("AZURE_AUTHORITY_HOST", authority, 1);
    setenv ("AZURE_TENANT_ID", ENTRA_TENANT, 1);
    setenv ("AZURE_CLIENT_ID", ENTRA_CLIENT, 1);
    setenv ("AZURE_CLIENT_SECRET", ENTRA_SECRET, 1);
    setenv ("AZURE_FEDERATED_TOKEN_FILE", file, 1);
    sl_aztoken_config_t config;
    char why [300];
    cr_assert_eq (sl_aztoken_config_from_env (&config, why, sizeof why), 0, "%s", why);
    cr_assert_eq (config.kind, SL_AZTOKEN_SECRET);
    s_aztoken_fetch (&config);
    sl_aztoken_config_clear (&config);
    unsetenv ("AZURE_CLIENT_SECRET");
    cr_assert_eq (sl_aztoken_config_from_env (&config, why, sizeof why), 0, "%s", why);
    cr_assert_eq (config.kind, SL_AZTOKEN_WORKLOAD);
    s_aztoken_fetch (&config);
    sl_aztoken_config_clear (&config);
    int status = s_identity_wait (node);
    sl_buf_reset (&text);
    harness_read (out, &text);
    cr_assert_eq (status, 0, "the requests match: %s", sl_buf_cstr (&text));
    //  What was compared, read here too.
    const char *at = strstr (sl_buf_cstr (&text), "listening\n");
    json_t *pairs = at ? json_loads (at + strlen ("listening\n"), JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    cr_assert_not_null (pairs, "%s", sl_buf_cstr (&text));
    json_t *secret = json_object_get (json_object_get (json_object_get (pairs, "client_secret"), "reference"),
                                      "fields");
    cr_expect_str_eq (json_string_value (json_object_get (secret, "client_secret")), ENTRA_SECRET);
    cr_expect_str_eq (json_string_value (json_object_get (secret, "grant_type")), "client_credentials");
    cr_expect_str_eq (json_string_value (json_object_get (secret, "scope")), SL_AZTOKEN_SCOPE);
    json_t *workload = json_object_get (json_object_get (json_object_get (pairs, "workload_identity"), "sluice"),
                                        "fields");
    cr_expect_str_eq (json_string_value (json_object_get (workload, "client_assertion")), ENTRA_POD_TOKEN);
    cr_expect_str_eq (json_string_value (json_object_get (workload, "client_assertion_type")),
                      SL_AZTOKEN_ASSERTION_TYPE);
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (json_object_get (pairs,
                      "workload_identity"), "sluice"), "path")), "/" ENTRA_TENANT "/oauth2/v2.0/token");
    json_decref (pairs);
    sl_buf_free (&text);
    unlink (cert);
    unlink (key);
    unlink (file);
    unlink (out);
    rmdir (dir);
}

Test (cloud, entra_azure_identity_takes_the_mocks_token, .timeout = 120)
{
    s_skip_without_azure_identity ();
    char dir [64] = "/tmp/sluice-cloud-entra-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char cert [128], key [128], out [128];
    s_tls (dir, cert, key, sizeof cert);
    snprintf (out, sizeof out, "%s/out", dir);
    int port = harness_free_port (), https_port = harness_free_port ();
    char port_text [16];
    snprintf (port_text, sizeof port_text, "%d", port);
    setenv ("SLUICE_MOCK_AZURE_CLIENT_SECRET", ENTRA_SECRET, 1);
    const char *mock_args [] = { "--port", port_text, "--azure-tenant-id", ENTRA_TENANT, "--azure-client-id",
                                 ENTRA_CLIENT, NULL };
    proc_t *mock = proc_start (dir, "mock", mock_args);
    cr_assert_not_null (mock);
    cr_assert (proc_wait_log (mock, "entra_tokens=checked", NULL, NULL, 0, ENTRA_WAIT_MS), "the mock plays Entra ID");
    //  The secret it was given: a token the mock issued.
    char args [512];
    snprintf (args, sizeof args, "mock %d %d %s %s %s", port, https_port, cert, key, ENTRA_SECRET);
    cr_assert_eq (s_identity_wait (s_identity_start (args, cert, out)), 0);
    sl_buf_t text = { 0 };
    harness_read (out, &text);
    cr_expect (strncmp (sl_buf_cstr (&text), "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.mock-entra-",
                        strlen ("eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.mock-entra-")) == 0, "%s", sl_buf_cstr (&text));
    cr_expect_eq (metric_value (port, "mock_entra_tokens_issued_total"), 1);
    //  Another: the mock's refusal, as the library reads it.
    snprintf (args, sizeof args, "mock %d %d %s %s %s", port, https_port, cert, key, "not-the-secret");
    cr_assert_eq (s_identity_wait (s_identity_start (args, cert, out)), 0);
    sl_buf_reset (&text);
    harness_read (out, &text);
    cr_expect (strncmp (sl_buf_cstr (&text), "refused: invalid_client:", strlen ("refused: invalid_client:")) == 0,
               "%s", sl_buf_cstr (&text));
    cr_expect (strstr (sl_buf_cstr (&text), "AADSTS7000215: Invalid client secret provided.") != NULL, "%s",
               sl_buf_cstr (&text));
    cr_expect_eq (metric_value (port, "mock_entra_tokens_issued_total"), 1);
    sl_buf_free (&text);
    cr_expect_eq (proc_stop (mock, 5000), 0);
    unlink (mock->log_path);
    free (mock);
    unlink (cert);
    unlink (key);
    unlink (out);
    rmdir (dir);
}
