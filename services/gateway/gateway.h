/*  gateway.h - the HTTP edge: client connections in, request jobs out,
    rendered frames back to the client.

    Each client request gets a random stream id; its job goes to an ingest
    instance (pinned for the stream). Frames for the stream arrive on the
    gateway's inbox from the emitters, in sequence; the gateway writes them
    to the client, drops any it already delivered, acknowledges progress to
    the ingest, and cancels the upstream call when the client goes away.

    The gateway is its core (gateway_core.h: the route table, the streams,
    admission, the request policy) and the endpoint families that register
    routes with it (gateway.c makes them, in the order they are tried).
*/
#ifndef GATEWAY_H
#define GATEWAY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/service/sl_service.h"

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h
typedef struct _sl_mcp_servers_t sl_mcp_servers_t;   //  common/mcp/sl_mcp_servers.h

typedef struct _gateway_t gateway_t;
typedef struct _gateway_core_t gateway_core_t;      //  gateway_core.h
typedef struct _gateway_legs_t gateway_legs_t;      //  gateway_leg.h

typedef struct {
    const char *http_host;
    int http_port;
    const char *bind;                   //  inbox for frames from the emitters
    const char *next;                   //  ingest endpoints
    size_t max_body;                    //  request body limit, bytes
    size_t stream_cap;                  //  bytes buffered per slow client
    size_t max_conns;                   //  client connections in all
    size_t max_conns_per_ip;            //  client connections from one address
    long request_timeout_ms;            //  a request's head and body within this
    int64_t stream_expiry_ms;           //  a stream with no frame for this long ends (504); 0: never
    const char *client_keys;            //  SLUICE_CLIENT_KEYS: accepted keys, comma-separated, without a
                                        //  keys file ("" : no check)
    const char *keys_path;              //  --keys-file: keys, teams, limits ("" : none)
    const char *keys_url;               //  --keys-url: the keys the console issued ("" : none)
    const char *keys_token;             //  SLUICE_KEYS_TOKEN: sent to keys_url as Bearer (NULL: none)
    bool tracing;                       //  SLUICE_OTLP_ENDPOINT set: a client without a trace gets one
    const char *redis_url;              //  SLUICE_REDIS_URL: limits shared with other gateways ("" : here)
    int limits_timeout_ms;              //  the longest wait for Redis, then limits_on_error
    const char *alerts_url;             //  --alerts-webhook ("": none)
    const char *alerts_secret;          //  SLUICE_APPROVALS_WEBHOOK_SECRET: its posts' HMAC key
    sl_providers_t *routes;                //  what GET /v1/models lists; borrowed, outlives the gateway
    const sl_mcp_servers_t *mcp_servers;   //  the MCP servers it fronts; borrowed, outlives it (NULL: none)
    const char *policy_path;            //  the policy file (request rules, history), "" for none
    long watch_ms;                      //  how often the policy file is checked for changes, 0: SIGHUP only
    const char *judge_approvals;        //  the judges' approvals endpoints, "" : none (/v1/approvals 503)
    bool allow_anonymous;               //  --allow-anonymous: no keys, yet an http_host other than loopback
    size_t mcp_sessions_max;            //  MCP client sessions in all (0: GATEWAY_MCP_SESSIONS_MAX)
    size_t mcp_sessions_per_key;        //  of one key or token user (0: GATEWAY_MCP_SESSIONS_PER_KEY)
    size_t mcp_sessions_per_team;       //  of one team (0: GATEWAY_MCP_SESSIONS_PER_TEAM)
} gateway_config_t;

gateway_t *gateway_new (sl_service_t *service, const gateway_config_t *config);
void gateway_destroy (gateway_t **self_p);
int gateway_http_port (gateway_t *self);
//  Its core and its legs (borrowed), for what starts the gateway's own
//  requests from outside a family: the integration tests' leg driver.
gateway_core_t *gateway_core (gateway_t *self);
gateway_legs_t *gateway_legs (gateway_t *self);

#endif
