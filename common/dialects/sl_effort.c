/*  sl_effort.c - one scale of reasoning effort (see sl_effort.h). */
#include "common/dialects/sl_effort.h"

#include <string.h>

//  The scale: each level's word and the thinking budget it stands for.
//  Budgets are the ones a provider that counts tokens (Anthropic, Gemini)
//  is asked for; a budget a client gave maps back to the least level that
//  covers it.
static const struct {
    const char *word;
    int64_t budget;
} s_levels [] = {
    [SL_EFFORT_UNSET] = { NULL, -1 },
    [SL_EFFORT_NONE] = { "none", 0 },
    [SL_EFFORT_MINIMAL] = { "minimal", 1024 },
    [SL_EFFORT_LOW] = { "low", 2048 },
    [SL_EFFORT_MEDIUM] = { "medium", 8192 },
    [SL_EFFORT_HIGH] = { "high", 24576 },
    [SL_EFFORT_XHIGH] = { "xhigh", 32768 },
    [SL_EFFORT_MAX] = { "max", 65536 },
};
_Static_assert (sizeof s_levels / sizeof s_levels [0] == SL_EFFORT_COUNT, "a word and a budget per level");

int
sl_effort_parse (sl_str_t word)
{
    for (int i = SL_EFFORT_NONE; i < SL_EFFORT_COUNT; i++)
        if (sl_str_eq (word, s_levels [i].word))
            return i;
    return SL_EFFORT_UNSET;
}

const char *
sl_effort_name (int effort)
{
    return effort > SL_EFFORT_UNSET && effort < SL_EFFORT_COUNT ? s_levels [effort].word : NULL;
}

int64_t
sl_effort_budget (int effort)
{
    return effort > SL_EFFORT_UNSET && effort < SL_EFFORT_COUNT ? s_levels [effort].budget : -1;
}

int
sl_effort_of_budget (int64_t budget)
{
    if (budget < 0)
        return SL_EFFORT_UNSET;
    for (int i = SL_EFFORT_NONE; i < SL_EFFORT_COUNT; i++)
        if (budget <= s_levels [i].budget)
            return i;
    return SL_EFFORT_MAX;
}

int
sl_effort_of (const sl_req_t *req, sl_xlate_t *x)
{
    if (req->effort.ptr) {
        int effort = sl_effort_parse (req->effort);
        if (effort != SL_EFFORT_UNSET)
            return effort;
        sl_xlate_drop (x, "a reasoning effort of a word sluice does not know");
    }
    return sl_effort_of_budget (req->budget);
}

int
sl_effort_clamp (int effort, int lo, int hi, sl_xlate_t *x)
{
    if (effort == SL_EFFORT_UNSET)
        return effort;
    int in = effort < lo ? lo : effort > hi ? hi : effort;
    if (in != effort)
        sl_xlate_drop (x, "reasoning effort beyond what the provider takes");
    return in;
}

const char *
sl_effort_word (const sl_req_t *req, int lo, int hi, sl_xlate_t *x)
{
    int effort = sl_effort_clamp (sl_effort_of (req, x), lo, hi, x);
    if (effort == SL_EFFORT_UNSET && req->thinking_adaptive)
        sl_xlate_drop (x, "adaptive thinking (the provider's default effort)");
    return sl_effort_name (effort);
}
