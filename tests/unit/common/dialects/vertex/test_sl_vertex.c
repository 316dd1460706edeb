/*  Unit tests: common/dialects/vertex (Vertex AI's Gemini and Claude:
    their URLs, the region's endpoint, the Claude body as Vertex AI takes
    it, a Gemini or Anthropic client's body forwarded, not translated). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_job.h"

static int
s_url (int dialect, const sl_provider_t *p, const char *model, sl_buf_t *url)
{
    sl_buf_reset (url);
    return sl_dialect_url (sl_dialect_get (dialect), p, sl_str (model), url, NULL);
}

Test (sl_vertex, urls_of_the_region_of_global_and_of_a_base_url)
{
    sl_buf_t url = { 0 };
    sl_provider_t p = { .name = "v", .dialect = SL_DIALECT_VERTEX, .region = "us-east5", .project = "proj-1" };
    cr_assert_eq (s_url (SL_DIALECT_VERTEX, &p, "gemini-2.5-pro", &url), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/"
                                          "us-east5/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    cr_assert_eq (s_url (SL_DIALECT_VERTEX_ANTHROPIC, &p, "claude-sonnet-4-5@20250929", &url), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/"
                                          "us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"
                                          "streamRawPredict");
    p.region = "global";
    cr_assert_eq (s_url (SL_DIALECT_VERTEX_ANTHROPIC, &p, "claude-x", &url), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "https://aiplatform.googleapis.com/v1/projects/proj-1/locations/global/"
                                          "publishers/anthropic/models/claude-x:streamRawPredict");
    p.base_url = "http://127.0.0.1:9000";
    cr_assert_eq (s_url (SL_DIALECT_VERTEX, &p, "models/g/x", &url), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "http://127.0.0.1:9000/v1/projects/proj-1/locations/global/publishers/"
                                          "google/models/g%2Fx:streamGenerateContent?alt=sse",
                      "a model's slash stays in its segment");
    cr_expect_eq (s_url (SL_DIALECT_VERTEX, &p, "", &url), -1);
    p.project = "";
    cr_expect_eq (s_url (SL_DIALECT_VERTEX, &p, "g", &url), -1);
    sl_buf_free (&url);
}

Test (sl_vertex, claude_s_body_has_vertex_s_version_and_no_model)
{
    const sl_dialect_t *d = sl_dialect_get (SL_DIALECT_VERTEX_ANTHROPIC);
    cr_assert_not_null (d);
    cr_expect_str_eq (d->name, "vertex-anthropic");
    cr_expect_str_eq (d->genai_provider, "gcp.vertex_ai");
    sl_buf_t out = { 0 };
    const char *body = "{\"model\":\"claude-x\",\"max_tokens\":64,\"temperature\":0.7,"
                       "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_assert_eq (d->forward (sl_str (body), NULL, &out), 0);
    json_t *root = json_loadb (out.data, out.len, 0, NULL);
    cr_assert (json_is_object (root), "%s", sl_buf_cstr (&out));
    cr_expect_null (json_object_get (root, "model"), "the path names it: %s", sl_buf_cstr (&out));
    cr_expect_str_eq (json_string_value (json_object_get (root, "anthropic_version")), "vertex-2023-10-16");
    cr_expect (json_is_true (json_object_get (root, "stream")));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"temperature\":0.7"), "%s", sl_buf_cstr (&out));
    json_decref (root);
    sl_buf_reset (&out);
    cr_expect_eq (d->forward (SL_STR_LIT ("[1]"), NULL, &out), -1);
    sl_buf_free (&out);
}

Test (sl_vertex, a_client_of_the_same_format_is_forwarded_not_translated)
{
    const char *body = "{\"model\":\"claude-x\",\"max_tokens\":64,\"stream\":true,"
                       "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    sl_endpoint_t ep = { .dialect = SL_DIALECT_ANTHROPIC };
    sl_job_t job;
    cr_assert_eq (sl_job_parse (&ep, sl_str (body), &job), 0);
    cr_assert_eq (sl_job_translate (&job, SL_DIALECT_VERTEX_ANTHROPIC), 0);
    cr_expect_eq (job.upstream_dialect, SL_DIALECT_VERTEX_ANTHROPIC);
    cr_expect_eq (job.drop_count, 0, "nothing crossed, nothing dropped");
    const char *up = sl_buf_cstr (&job.upstream_body);
    cr_expect_null (strstr (up, "\"model\""), "%s", up);
    cr_expect_not_null (strstr (up, "\"anthropic_version\":\"vertex-2023-10-16\""), "%s", up);
    sl_job_clear (&job);
    //  An OpenAI client's request is translated into it.
    ep.dialect = SL_DIALECT_OPENAI;
    const char *chat = "{\"model\":\"claude-x\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_assert_eq (sl_job_parse (&ep, sl_str (chat), &job), 0);
    cr_assert_eq (sl_job_translate (&job, SL_DIALECT_VERTEX_ANTHROPIC), 0, "%s", sl_buf_cstr (&job.error_message));
    up = sl_buf_cstr (&job.upstream_body);
    cr_expect_null (strstr (up, "\"model\""), "%s", up);
    cr_expect_not_null (strstr (up, "vertex-2023-10-16"), "%s", up);
    sl_job_clear (&job);
}
