/*  cluster.h - several instances of every stage on loopback, for the
    scaling and restart tests.

    Every instance gets fixed ports picked at start, so an instance that is
    killed can be started again on the same endpoint. Each stage's --next
    lists every slot of the next stage; slots beyond a stage's count are
    declared but not started (a later cluster_start_instance brings them up:
    scaling out without restarting anything). The emitters' --gateways
    lists every gateway's inbox. CURVE is on, with keys sluice-keygen makes
    in the cluster's directory.
*/
#ifndef CLUSTER_H
#define CLUSTER_H

#include "tests/integration/harness.h"

#define CLUSTER_SLOTS 4                 //  instances a stage may have
#define CLUSTER_GATEWAYS 3              //  gateways a cluster may have

enum { CL_INGEST, CL_AGGREGATOR, CL_JUDGE, CL_EMITTER, CL_STAGES };

typedef struct {
    int count [CL_STAGES];              //  instances started per stage
    int slots [CL_STAGES];              //  endpoints declared (>= count)
    int mock_delay_ms;
    const char *policy;                 //  judge policy file, NULL for none
    const char *const *judge_args;      //  extra flags, NULL-terminated (or NULL)
    const char *const *ingest_args;
    const char *const *stage_args;      //  extra flags of the aggregator, judge and emitter
    const char *const *gateway_args;    //  extra gateway flags
    int gateways;                       //  1 to CLUSTER_GATEWAYS
    int gateway_slots;                  //  gateways declared (>= gateways): the emitters know every
                                        //  one; cluster_start_gateway brings up one more
    bool audit;                         //  the emitters spool records for sluice-audit (--audit)
    bool gateway_approvals;             //  the gateways ask every judge slot's approvals socket
} cluster_opts_t;

typedef struct {
    cluster_opts_t opts;
    char dir [256];
    proc_t *mock;
    int mock_port;
    proc_t *gateway [CLUSTER_GATEWAYS];
    int http_port [CLUSTER_GATEWAYS];
    int gateway_port [CLUSTER_GATEWAYS];        //  inbox
    char keys [300];                    //  the key directory
    proc_t *procs [CL_STAGES][CLUSTER_SLOTS];
    int port [CL_STAGES][CLUSTER_SLOTS];        //  inbox
    int metrics [CL_STAGES][CLUSTER_SLOTS];
    int restarts [CL_STAGES][CLUSTER_SLOTS];
    int audit_port [CLUSTER_SLOTS];     //  each emitter's --audit, when opts.audit
    int approvals_port [CLUSTER_SLOTS]; //  each judge's --approvals-bind
    char approvals [CLUSTER_SLOTS][64]; //  its endpoint
} cluster_t;

//  Start the mock, the stages and the gateway(s); NULL when one fails.
cluster_t *cluster_start (const cluster_opts_t *opts);
//  Start (again) instance i of a stage on its endpoint. wait: until it
//  logs that it started. 0 ok.
int cluster_start_instance (cluster_t *c, int stage, int i, bool wait);
//  Start gateway g (a declared slot with none running); wait: as
//  cluster_wait_gateway. 0 ok.
int cluster_start_gateway (cluster_t *c, int g, bool wait);
//  Wait until gateway g started, heard from the ingests and every running
//  emitter heard from it (the streams it takes get their frames). 0 ok.
int cluster_wait_gateway (cluster_t *c, int g);
//  SIGKILL instance i of a stage.
void cluster_kill (cluster_t *c, int stage, int i);
//  SIGKILL gateway g.
void cluster_kill_gateway (cluster_t *c, int g);
//  Stop everything; returns how many did not exit cleanly (killed
//  instances not started again are not counted).
int cluster_stop (cluster_t *c);

#endif
