/*  Unit tests: common/bus/sl_inbox (a stage's one inbox: a bound ROUTER
    whose messages are [sender][data], answered by the sender's identity;
    a message of another shape is dropped, and a peer gone is an error).
    Plaintext (no bus), on 127.0.0.1; every wait is bounded. The bus's
    CURVE and ZAP on it: tests/unit/common/bus/test_sl_zap.c. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "common/bus/sl_inbox.h"

#define S_WAIT_MS 5000                  //  longest wait for a message

//  Receive from the inbox, waiting for it (bounded).
static int
s_recv (sl_inbox_t *inbox, sl_str_t *peer, sl_str_t *data)
{
    zpoller_t *poller = zpoller_new (sl_inbox_sock (inbox), NULL);
    zpoller_wait (poller, S_WAIT_MS);
    zpoller_destroy (&poller);
    return sl_inbox_recv (inbox, peer, data);
}

Test (sl_inbox, a_message_comes_with_its_sender_and_the_answer_goes_back)
{
    sl_inbox_t *inbox = sl_inbox_new ("tcp://127.0.0.1:*", NULL, "test");
    cr_assert_not_null (inbox);
    const char *endpoint = sl_inbox_endpoint (inbox);
    cr_expect_eq (strncmp (endpoint, "tcp://127.0.0.1:", 16), 0, "%s", endpoint);
    cr_expect_gt (atoi (endpoint + 16), 0, "the port actually bound: %s", endpoint);
    sl_str_t peer, data;
    cr_expect_eq (sl_inbox_recv (inbox, &peer, &data), 0, "nothing waiting");
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    zsock_set_rcvtimeo (dealer, S_WAIT_MS);
    cr_assert_eq (zsock_connect (dealer, "%s", endpoint), 0);
    cr_assert_eq (zstr_send (dealer, "batch of messages"), 0);
    cr_assert_eq (s_recv (inbox, &peer, &data), 1);
    cr_expect (sl_str_eq (data, "batch of messages"));
    cr_expect_gt (peer.len, 0, "the sender's identity");
    char copy [256];
    cr_assert_lt (peer.len, sizeof copy);
    memcpy (copy, peer.ptr, peer.len);
    sl_str_t sender = sl_str_n (copy, peer.len);
    cr_expect_eq (sl_inbox_send (inbox, sender, "credit", 6), 0);
    char *answer = zstr_recv (dealer);
    cr_assert_not_null (answer, "answered by its identity");
    cr_expect_str_eq (answer, "credit");
    zstr_free (&answer);
    //  Three frames are not a message of the protocol: dropped.
    cr_assert_eq (zstr_sendm (dealer, "one"), 0);
    cr_assert_eq (zstr_send (dealer, "two"), 0);
    cr_expect_eq (s_recv (inbox, &peer, &data), -1);
    cr_expect_eq (sl_inbox_recv (inbox, &peer, &data), 0, "and nothing is left of it");
    //  A sender that is not there.
    cr_expect_eq (sl_inbox_send (inbox, SL_STR_LIT ("nobody"), "x", 1), -1);
    zsock_destroy (&dealer);
    sl_inbox_destroy (&inbox);
    sl_inbox_destroy (&inbox);
    cr_expect_null (inbox);
}

Test (sl_inbox, a_bind_that_fails_gives_no_inbox)
{
    sl_inbox_t *first = sl_inbox_new ("tcp://127.0.0.1:*", NULL, "test");
    cr_assert_not_null (first);
    sl_inbox_t *second = sl_inbox_new (sl_inbox_endpoint (first), NULL, "test");
    cr_expect_null (second, "its port is taken");
    sl_inbox_destroy (&second);
    second = sl_inbox_new ("nonsense://", NULL, "test");
    cr_expect_null (second);
    sl_inbox_destroy (&second);
    sl_inbox_destroy (&first);
}
