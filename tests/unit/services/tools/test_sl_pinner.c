/*  Unit tests: services/tools/sl_pinner (pins from a request body and from
    the inventory's definitions, the same digests either way). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/dialects/sl_dialect.h"
#include "common/tools/sl_tooldef.h"
#include "services/tools/sl_pinner.h"

Test (sl_pinner, request_and_list_agree)
{
    const char *body = "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                       "\"tools\":[{\"name\":\"mcp__github__create_issue\",\"description\":\"Create an issue\","
                       "\"input_schema\":{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\"}}}}]}";
    sl_pins_t *a = sl_pins_new (), *b = sl_pins_new ();
    sl_buf_t why = { 0 };
    cr_assert_eq (sl_pinner_request (a, "payments", sl_dialect_parse ("anthropic"), sl_str (body), &why), 1, "%s",
                  sl_buf_cstr (&why));
    const char *list = "[{\"team\":\"search\",\"name\":\"other\",\"digest\":\"" 
                       "1111111111111111111111111111111111111111111111111111111111111111\"},"
                       "{\"team\":\"payments\",\"name\":\"mcp__github__create_issue\",\"server\":\"github\","
                       "\"description\":\"Create an issue\",\"schema\":{\"properties\":{\"title\":{\"type\":\"string\"}},"
                       "\"type\":\"object\"}}]";
    cr_assert_eq (sl_pinner_list (b, "payments", sl_str (list), &why), 1, "%s", sl_buf_cstr (&why));
    sl_str_t team = sl_str ("payments"), name = sl_str ("mcp__github__create_issue");
    cr_assert_not_null (sl_pins_digest (a, team, name));
    cr_expect_str_eq (sl_pins_digest (a, team, name), sl_pins_digest (b, team, name));
    cr_expect_null (sl_pins_digest (b, sl_str ("search"), sl_str ("other")), "another team's entry is skipped");
    //  A digest that is not its definition's is refused.
    const char *wrong = "[{\"team\":\"payments\",\"name\":\"t\",\"description\":\"d\",\"digest\":"
                        "\"2222222222222222222222222222222222222222222222222222222222222222\"}]";
    cr_expect_eq (sl_pinner_list (b, "payments", sl_str (wrong), &why), -1);
    cr_expect (strstr (sl_buf_cstr (&why), "is not its definition's") != NULL, "%s", sl_buf_cstr (&why));
    sl_buf_reset (&why);
    cr_expect_eq (sl_pinner_list (b, "payments", sl_str ("{}"), &why), -1);
    cr_expect_eq (sl_pinner_request (b, "payments", sl_dialect_parse ("openai"), sl_str ("[]"), &why), -1);
    sl_buf_free (&why);
    sl_pins_destroy (&a);
    sl_pins_destroy (&b);
}
