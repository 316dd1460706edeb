/*  Fuzz target: what an emitter sends the audit must never crash it
    (services/audit: the receiver, the archive on an SQLite store in
    memory, the live view). Any bytes are read as a batch of REC messages,
    as sluice-audit reads a frame from an emitter; every record is offered
    to the receiver, and what it takes is written and shown live. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "services/audit/recorder/sl_archive.h"
#include "services/audit/console/sl_live.h"
#include "services/audit/recorder/sl_receiver.h"
#include "services/audit/store/sl_store.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    static sl_store_t *store;
    static sl_archive_t *archive;
    static sl_live_t *live;
    static sl_codec_t *codec, *inner;
    if (!store) {
        char *error = NULL;
        store = sl_store_open (":memory:", &error);
        if (!store)
            __builtin_trap ();
        archive = sl_archive_new (store, 256);
        live = sl_live_new ();
        codec = sl_codec_new ();
        inner = sl_codec_new ();
    }
    sl_receiver_t rx = { 0 };
    sl_buf_t events = { 0 };
    size_t offset = 0;
    sl_msg_t rec;
    if (sl_store_begin (store))
        __builtin_trap ();
    while (sl_codec_decode (codec, data, size, &offset, &rec) == 0) {
        if (rec.type != SL_MSG_REC || sl_receiver_offer (&rx, rec.incarnation, rec.seq) != SL_RECEIVER_TAKE)
            continue;
        size_t at = 0;
        sl_msg_t msg;
        if (sl_codec_decode (inner, rec.body.ptr, rec.body.len, &at, &msg) != 0)
            continue;
        sl_record_meta_t meta = { rec.instance, rec.incarnation, rec.seq, rec.kind, rec.ts };
        if (sl_archive_apply (archive, &meta, &msg) == 1)
            sl_live_feed (live, &meta, &msg, &events);
    }
    //  Nothing kept between inputs: the store stays small.
    sl_store_rollback (store);
    sl_live_tick (live, INT64_MAX / 2);
    sl_receiver_commit (&rx);
    sl_buf_free (&events);
    return 0;
}
