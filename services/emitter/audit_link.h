/*  audit_link.h - the emitter's side of the audit link.

    Binds --audit (a ROUTER, ZAP domain "audit": only keys of role audit
    may connect), keeps what the audit store needs in a bounded spool
    (sl_spool.h) and sends it to the audit that connected, over and over
    until it says the records are committed. PROTOCOL.md, "The audit
    link", has the messages; docs/audit.md, the guarantees.

    Metrics: sluice_audit_spool_records and sluice_audit_spool_bytes (held,
    not yet committed), sluice_audit_records_total (spooled),
    sluice_audit_records_committed_total, sluice_audit_records_lost_total
    (dropped past --audit-spool: the loss the store shows as a gap),
    sluice_audit_gaps_total, sluice_audit_records_resent_total,
    sluice_audit_connected (1 while an audit is active).
*/
#ifndef AUDIT_LINK_H
#define AUDIT_LINK_H

#include "common/service/sl_service.h"
#include "proto/sl_msg.h"

typedef struct _audit_link_t audit_link_t;

//  NULL (logged) when the endpoint cannot be bound or spool_bytes is bad.
audit_link_t *audit_link_new (sl_service_t *svc, const char *endpoint, const char *spool_bytes);
void audit_link_destroy (audit_link_t **self_p);
//  A message from the judges, before the emitter handles it.
void audit_link_judged (audit_link_t *self, const sl_msg_t *msg);
//  An event the emitter raised itself while handling the last judged message.
void audit_link_own (audit_link_t *self, const sl_msg_t *msg);
//  Send what may go now (end of a reactor turn).
void audit_link_flush (audit_link_t *self);
//  Nothing left for a drain to wait for: the audit committed every record
//  spooled, or no audit is connected to commit them (they stay counted in
//  sluice_audit_spool_records and are lost with the process).
bool audit_link_settled (audit_link_t *self);

#endif
