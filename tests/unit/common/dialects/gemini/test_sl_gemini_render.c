/*  Unit tests: the Gemini streamGenerateContent renderer, through the emitter. */
#include "tests/unit/emit_driver.h"

#define MAX_EVENTS 64

static json_t *
s_get (json_t *j, const char *path)
{
    char key [64];
    const char *p = path;
    while (j && *p) {
        size_t n = strcspn (p, ".");
        snprintf (key, sizeof key, "%.*s", (int) n, p);
        if (key [0] >= '0' && key [0] <= '9')
            j = json_array_get (j, (size_t) atoi (key));
        else
            j = json_object_get (j, key);
        p += n + (p [n] == '.');
    }
    return j;
}

Test (sl_render_gemini, renders_every_block_in_a_legal_stream)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_GEMINI, SL_F_STREAM);
    driver_full_response (&d, NULL);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "every event passed the validator:\n%s", driver_bytes (&d));
    sl_buf_t text = { 0 }, thought = { 0 };
    int calls = 0, citations = 0, finishes = 0;
    const char *signature = NULL;
    for (int i = 0; i < n; i++) {
        json_t *cand = s_get (ev [i].data, "candidates.0");
        cr_expect_not_null (cand, "event %d has a candidate", i);
        cr_expect_str_eq (json_string_value (s_get (ev [i].data, "responseId")), "resp-id-1");
        json_t *parts = s_get (cand, "content.parts");
        for (size_t k = 0; k < json_array_size (parts); k++) {
            json_t *part = json_array_get (parts, k);
            json_t *t = json_object_get (part, "text");
            if (json_is_string (t))
                sl_buf_puts (json_is_true (json_object_get (part, "thought")) ? &thought : &text,
                             json_string_value (t));
            if (json_object_get (part, "thoughtSignature"))
                signature = json_string_value (json_object_get (part, "thoughtSignature"));
            if (json_object_get (part, "functionCall")) {
                calls++;
                cr_expect_str_eq (json_string_value (s_get (part, "functionCall.name")), "get_weather");
                cr_expect_str_eq (json_string_value (s_get (part, "functionCall.args.city")), "Paris");
            }
        }
        if (s_get (cand, "citationMetadata.citationSources.0"))
            citations++;
        if (json_object_get (cand, "finishReason")) {
            finishes++;
            cr_expect_eq (i, n - 1, "the finish is last");
            cr_expect_str_eq (json_string_value (json_object_get (cand, "finishReason")), "STOP");
            cr_expect_eq (json_integer_value (s_get (ev [i].data, "usageMetadata.promptTokenCount")), 40);
            cr_expect_eq (json_integer_value (s_get (ev [i].data, "usageMetadata.candidatesTokenCount")), 20,
                          "without the 5 thought tokens");
            cr_expect_eq (json_integer_value (s_get (ev [i].data, "usageMetadata.cachedContentTokenCount")), 8);
            cr_expect_eq (json_integer_value (s_get (ev [i].data, "usageMetadata.thoughtsTokenCount")), 5);
        }
    }
    cr_expect_str_eq (sl_buf_cstr (&text), "Paris is sunny \"today\".blocked run_shell");
    cr_expect_str_eq (sl_buf_cstr (&thought), "Let me think.");
    cr_expect_str_eq (signature ? signature : "", "sig-abc");
    cr_expect_eq (calls, 1);
    cr_expect_eq (citations, 1);
    cr_expect_eq (finishes, 1);
    sl_buf_free (&text);
    sl_buf_free (&thought);
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_render_gemini, errors_in_the_dialect)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_GEMINI, SL_F_STREAM);
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("invalid_request_error");
    err.message = sl_str ("no such model");
    err.status = 404;
    driver_feed (&d, err);
    cr_assert_eq (d.rec.count, 1);
    cr_expect_eq (d.rec.msgs [0]->status, 404);
    cr_expect_str_eq (driver_bytes (&d),
                      "{\"error\":{\"code\":404,\"message\":\"no such model\",\"status\":\"NOT_FOUND\"}}");
    driver_stop (&d);

    //  Mid-stream: the error as a data: event (current SDKs raise their
    //  ApiError for it), then bare, as the Gemini API ends a failed stream
    //  (the SDK inside Gemini CLI raises its ApiError only for that form).
    //  The provider's code and status are kept.
    static const struct {
        int status;
        const char *code, *message, *tail;
    } cases [] = {
        { 499, "CANCELLED", "The operation was cancelled.",
          "data: {\"error\":{\"code\":499,\"message\":\"The operation was cancelled.\",\"status\":\"CANCELLED\"}}\n\n"
          "{\"error\":{\"code\":499,\"message\":\"The operation was cancelled.\",\"status\":\"CANCELLED\"}}\n" },
        { 403, "policy_violation", "sluice ended this response",
          "data: {\"error\":{\"code\":403,\"message\":\"sluice ended this response\",\"status\":\"PERMISSION_DENIED\"}}\n\n"
          "{\"error\":{\"code\":403,\"message\":\"sluice ended this response\",\"status\":\"PERMISSION_DENIED\"}}\n" },
        { 0, "invalid_request_error", "no such model",
          "data: {\"error\":{\"code\":502,\"message\":\"no such model\",\"status\":\"UNAVAILABLE\"}}\n\n"
          "{\"error\":{\"code\":502,\"message\":\"no such model\",\"status\":\"UNAVAILABLE\"}}\n" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        driver_start (&d, SL_DIALECT_GEMINI, SL_F_STREAM);
        sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
        m.text = sl_str ("partial");
        driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
        driver_feed (&d, m);
        err.status = cases [i].status;
        err.code = sl_str (cases [i].code);
        err.message = sl_str (cases [i].message);
        driver_feed (&d, err);
        driver_end (&d);
        const char *bytes = driver_bytes (&d);
        size_t n = strlen (bytes), tail = strlen (cases [i].tail);
        cr_expect (strncmp (bytes, "data: {", 7) == 0, "the text first: %s", bytes);
        cr_expect (n > tail && strcmp (bytes + n - tail, cases [i].tail) == 0, "%s", bytes);
        cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", bytes);
        driver_stop (&d);
    }
}

Test (sl_render_gemini, grounding_and_citation_blocks)
{
    //  The decoder passes search grounding on as a citation: it goes back
    //  as groundingMetadata, not as a citation source. A citation block's
    //  citations go out as its deltas; its end (which lists them all, as
    //  {"citations":[...]}) adds nothing.
    driver_t d;
    driver_start (&d, SL_DIALECT_GEMINI, SL_F_STREAM);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
    m.text = sl_str ("Sunny.");
    driver_feed (&d, m);
    m = driver_block (SL_B_DELTA, SL_BK_CITATION, 0);
    m.body = sl_str ("{\"webSearchQueries\":[\"weather\"],\"groundingChunks\":[]}");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("Sunny.");
    //  As the aggregator ends the block: each delta's citation again.
    m.body = sl_str ("{\"citations\":[{\"webSearchQueries\":[\"weather\"],\"groundingChunks\":[]}]}");
    driver_feed (&d, m);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_CITATION, 1));
    m = driver_block (SL_B_DELTA, SL_BK_CITATION, 1);
    m.body = sl_str ("{\"uri\":\"https://a\"}");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_CITATION, 1);
    m.body = sl_str ("{\"citations\":[{\"uri\":\"https://a\"}]}");
    driver_feed (&d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_STOP;
    driver_feed (&d, m);
    driver_end (&d);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
    int grounding = 0, sources = 0;
    for (int i = 0; i < n; i++) {
        json_t *cand = s_get (ev [i].data, "candidates.0");
        if (s_get (cand, "groundingMetadata")) {
            grounding++;
            cr_expect_str_eq (json_string_value (s_get (cand, "groundingMetadata.webSearchQueries.0")),
                              "weather");
        }
        json_t *list = s_get (cand, "citationMetadata.citationSources");
        for (size_t k = 0; k < json_array_size (list); k++) {
            sources++;
            cr_expect_str_eq (json_string_value (s_get (json_array_get (list, k), "uri")), "https://a",
                              "%s", driver_bytes (&d));
        }
    }
    cr_expect_eq (grounding, 1, "%s", driver_bytes (&d));
    cr_expect_eq (sources, 1, "once, from the block's end (the delta only informs taps): %s", driver_bytes (&d));
    driver_events_free (ev, n);
    driver_stop (&d);
}
