/*  sl_effort.h - how hard a model should think: one scale for every
    dialect.

    Clients ask in their dialect's words: Chat Completions
    `reasoning_effort`, Responses `reasoning.effort`, Anthropic
    `output_config.effort` or a thinking `budget_tokens`, Gemini a
    `thinkingBudget` or a `thinkingLevel`. The normalized request keeps
    what was said (sl_req_t: effort, budget, thinking_off,
    thinking_adaptive); a renderer of another dialect reads it on this one
    scale, with one table of budgets, and clamps it into what its API
    takes. Nothing else in sluice maps an effort to a budget or back.
*/
#ifndef SL_EFFORT_H
#define SL_EFFORT_H

#include <stdint.h>

#include "common/dialects/sl_req.h"

typedef enum {
    SL_EFFORT_UNSET = 0,                //  not asked (or a word the scale does not know)
    SL_EFFORT_NONE,                     //  no reasoning
    SL_EFFORT_MINIMAL,
    SL_EFFORT_LOW,
    SL_EFFORT_MEDIUM,
    SL_EFFORT_HIGH,
    SL_EFFORT_XHIGH,
    SL_EFFORT_MAX,
    SL_EFFORT_COUNT
} sl_effort_t;

//  A dialect's word for an effort (the same words in every dialect that
//  has them); SL_EFFORT_UNSET for none or an unknown one.
int sl_effort_parse (sl_str_t word);
//  The word of a level (NULL for SL_EFFORT_UNSET).
const char *sl_effort_name (int effort);
//  The thinking budget a level stands for, in tokens (0 for none, -1 for
//  unset).
int64_t sl_effort_budget (int effort);
//  The least level whose budget covers a budget (SL_EFFORT_NONE for 0,
//  SL_EFFORT_UNSET for a negative one).
int sl_effort_of_budget (int64_t budget);
//  What a request asks on the scale: its effort when it names a level,
//  else its budget's level. A word the scale does not know is noted
//  dropped (x) and read as unset. (Thinking turned off, or left to the
//  model, is the renderer's to say: thinking_off, thinking_adaptive.)
int sl_effort_of (const sl_req_t *req, sl_xlate_t *x);
//  A level within [lo, hi], the range a dialect's API takes; a level
//  moved is noted dropped (x, "reasoning effort beyond what the provider
//  takes"). SL_EFFORT_UNSET stays unset.
int sl_effort_clamp (int effort, int lo, int hi, sl_xlate_t *x);
//  The word a dialect that names levels sends for what a request asks
//  (sl_effort_of, clamped to [lo, hi]); NULL when nothing was asked.
//  Thinking left to the model has no word: it is noted dropped (the
//  provider's default effort is what it gets).
const char *sl_effort_word (const sl_req_t *req, int lo, int hi, sl_xlate_t *x);

#endif
