/*  sl_decide.c - a decision service's answers (see sl_decide.h).

    Answers are small and come once per asked call, so they are read with
    jansson, strictly: OPA's data API answers {"result": ...} and nothing
    here guesses at another shape. The service's reason is kept clipped
    (it goes into verdicts and notices); a rewrite is kept as compact JSON
    for the policy to check against the tool's schema.
*/
#include "common/llm/sl_decide.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"

void
sl_decide_spec_defaults (sl_llm_spec_t *self)
{
    sl_llm_spec_defaults (self);
    self->kind = SL_LLM_DECIDE;
}

int
sl_decide_parse_answer (int status, sl_str_t body, sl_llm_result_t *out)
{
    memset (out, 0, sizeof *out);
    if (status < 200 || status > 299) {
        char prefix [64];
        snprintf (prefix, sizeof prefix, "the decision service answered HTTP %d", status);
        return sl_llm_result_excerpt (out, prefix, body.ptr, body.len);
    }
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    if (!json_is_object (root)) {
        json_decref (root);
        return sl_llm_result_excerpt (out, "the decision service's answer is not a JSON object", body.ptr, body.len);
    }
    //  OPA answers {} (no result) when the policy does not define the
    //  document asked for: that is no decision, never an allow.
    json_t *result = json_object_get (root, "result");
    const char *wrong = NULL;
    json_t *allow = json_object_get (result, "allow");
    json_t *reason = json_object_get (result, "reason");
    json_t *rewrite = json_object_get (result, "rewrite");
    if (!result)
        wrong = "the decision service's answer has no result";
    else
    if (!json_is_object (result))
        wrong = "the decision service's result is not an object";
    else
    if (!allow)
        wrong = "the decision service's result has no allow";
    else
    if (!json_is_boolean (allow))
        wrong = "the decision service's allow is not a boolean";
    else
    if (reason && !json_is_string (reason) && !json_is_null (reason))
        wrong = "the decision service's reason is not a string";
    else
    if (rewrite && !json_is_object (rewrite) && !json_is_null (rewrite))
        wrong = "the decision service's rewrite is not an object";
    if (wrong) {
        json_decref (root);
        return sl_llm_result_excerpt (out, wrong, body.ptr, body.len);
    }
    out->check = SL_CHK_RAN;
    out->probability = NAN;             //  a decision, not an estimate
    out->allow = json_is_true (allow);
    if (json_is_string (reason) && json_string_length (reason))
        out->explanation = sl_llm_clip (json_string_value (reason), json_string_length (reason),
                                        SL_DECIDE_MAX_REASON);
    if (json_is_object (rewrite)) {
        //  jansson allocates with malloc by default; copied all the same,
        //  so what the result owns is freed with free ().
        char *text = json_dumps (rewrite, JSON_COMPACT);
        out->rewrite = sl_xstrdup (text ? text : "{}");
        free (text);
    }
    json_decref (root);
    return 0;
}

int
sl_decide_max_age (const char *cache_control)
{
    if (!cache_control)
        return 0;
    long age = 0;
    const char *p = cache_control;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = strcspn (p, ",");
        if ((n >= 8 && strncasecmp (p, "no-store", 8) == 0) || (n >= 8 && strncasecmp (p, "no-cache", 8) == 0))
            return 0;
        if (n > 8 && strncasecmp (p, "max-age=", 8) == 0) {
            const char *v = p + 8;
            if (*v == '"')
                v++;
            if (!isdigit ((unsigned char) *v))
                return 0;
            char *end = NULL;
            age = strtol (v, &end, 10);
            if (*end == '"')
                end++;
            while (*end == ' ' || *end == '\t')
                end++;
            if (*end && *end != ',')
                return 0;               //  max-age=10s, max-age=1x: not a number
        }
        p += n;
    }
    if (age < 0)
        return 0;
    return age > SL_DECIDE_MAX_AGE_S ? SL_DECIDE_MAX_AGE_S : (int) age;
}
