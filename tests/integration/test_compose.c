/*  Integration: the commands of docker-compose.yml, run as they are.

    Docker does not run here, so this test reads docker-compose.yml, takes
    every service's command, and starts the same programs with the same
    flags on loopback: service host names become 127.0.0.1, every port
    becomes a free local port (the same compose port always maps to the same
    local one), the image's policy path becomes deploy/policy.yaml and the
    volumes under /var/lib/sluice fresh directories. A service others wait
    for with service_completed_successfully (the keygen, running the
    image's deploy/compose/sluice-compose-init) runs first, to its end.
    Then it checks each healthcheck URL and sends a request through the
    gateway with the first client key the keygen made, over the CURVE bus
    with the bus keys it made, and finds it in sluice-audit's console. The
    postgres and redis services (images of their own, not sluice programs)
    are stood in for by a PostgreSQL cluster and a redis-server the test
    starts on their loopback ports, with the service's user and database
    (tests/pgtmp.h, tests/redistmp.h); without PostgreSQL's programs the
    test is skipped, with the reason. A service's SLUICE_* environment (the
    audit's DSN) is given to its process, rewritten like its flags.
    Services of a profile (the tap, Prometheus) are not started, as a plain
    `up` does not.

    It also checks what the file promises about exposure: the bus network is
    internal, nothing but the gateway's client port, the audit's console and
    Prometheus (its profile) is published, and those only on 127.0.0.1;
    metrics are published by no service (they listen on the containers' bus
    address, for Prometheus); every process on the bus reads the key volume
    read-only. `make compose-test` runs the file in Docker.
*/
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "services/audit/store/sl_store.h"
#include "tests/pgtmp.h"
#include "tests/redistmp.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/integration/loopback.h"
#include "tests/integration/sse_client.h"

#define MAX_SERVICES 16
#define MAX_ARGS 32

typedef struct {
    char name [32];
    char *args [MAX_ARGS];              //  command without the program
    int argc;
    char program [64];
    char health_url [256];
    bool oneshot;                       //  others wait for it to complete
    bool keys_ro;                       //  mounts the key volume read-only
    bool metrics_env;                   //  SLUICE_<ROLE>_METRICS_HOST in its environment
    bool profiled;                      //  of a profile: not started by a plain up
    int published;                      //  ports entries
    char image [64];                    //  an image of its own (not sluice's), or ""
    char *env [MAX_ARGS];               //  SLUICE_* environment, NAME=value, rewritten
    int envc;
    char pg_user [32], pg_db [32];      //  postgres: its POSTGRES_USER, POSTGRES_DB
} service_t;

#define KEYS_PATH "/var/lib/sluice/keys"
#define VOLUMES_PATH "/var/lib/sluice/"   //  the image's folders the volumes are mounted on
#define SLUICE_IMAGE "sluice:latest"
static char s_keys [256];               //  the local directory standing for the key volume
static char s_root [200];               //  and for /var/lib/sluice, the other volumes under it

//  An argument or environment value for loopback: as loopback_rewrite
//  does, then a path under the image's /var/lib/sluice into s_root.
static char *
s_rewrite (const char *arg, const char *prev)
{
    char *value = loopback_rewrite (arg, prev, KEYS_PATH, s_keys);
    if (strncmp (value, VOLUMES_PATH, strlen (VOLUMES_PATH)) != 0)
        return value;
    char local [512];
    snprintf (local, sizeof local, "%s/%s", s_root, value + strlen (VOLUMES_PATH));
    free (value);
    return strdup (local);
}

//  The value of key in a mapping, looking into what it merges (<<: *anchor)
//  as compose does.
static yaml_node_t *
s_get (yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    yaml_node_t *merged = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (doc, p->key);
        if (k->type != YAML_SCALAR_NODE)
            continue;
        if (strcmp ((char *) k->data.scalar.value, key) == 0)
            return yaml_document_get_node (doc, p->value);
        if (strcmp ((char *) k->data.scalar.value, "<<") == 0)
            merged = yaml_document_get_node (doc, p->value);
    }
    return merged ? s_get (doc, merged, key) : NULL;
}

static int
s_load (service_t *services)
{
    FILE *f = fopen ("docker-compose.yml", "rb");
    cr_assert_not_null (f, "run from the repository root");
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_file (&parser, f);
    cr_assert (yaml_parser_load (&parser, &doc), "docker-compose.yml parses");
    yaml_node_t *list = s_get (&doc, yaml_document_get_root_node (&doc), "services");
    cr_assert_not_null (list);
    int n = 0;
    for (yaml_node_pair_t *p = list->data.mapping.pairs.start; p < list->data.mapping.pairs.top; p++) {
        service_t *s = &services [n++];
        memset (s, 0, sizeof *s);
        snprintf (s->name, sizeof s->name, "%s", (char *) yaml_document_get_node (&doc, p->key)->data.scalar.value);
        yaml_node_t *svc = yaml_document_get_node (&doc, p->value);
        yaml_node_t *cmd = s_get (&doc, svc, "command");
        yaml_node_t *image = s_get (&doc, svc, "image");
        if (image && image->type == YAML_SCALAR_NODE) {
            char *name = loopback_rewrite ((char *) image->data.scalar.value, NULL, KEYS_PATH, s_keys);
            if (strcmp (name, SLUICE_IMAGE) != 0)
                snprintf (s->image, sizeof s->image, "%s", name);
            free (name);
        }
        s->profiled = s_get (&doc, svc, "profiles") != NULL;
        yaml_node_t *env = s_get (&doc, svc, "environment");
        for (yaml_node_pair_t *e = env && env->type == YAML_MAPPING_NODE ? env->data.mapping.pairs.start : NULL;
             e && e < env->data.mapping.pairs.top; e++) {
            const char *k = (char *) yaml_document_get_node (&doc, e->key)->data.scalar.value;
            const char *v = (char *) yaml_document_get_node (&doc, e->value)->data.scalar.value;
            if (strcmp (k, "POSTGRES_USER") == 0)
                snprintf (s->pg_user, sizeof s->pg_user, "%s", v);
            if (strcmp (k, "POSTGRES_DB") == 0)
                snprintf (s->pg_db, sizeof s->pg_db, "%s", v);
            if (strncmp (k, "SLUICE_", 7) != 0 || strcmp (k, "SLUICE_LOG_LEVEL") == 0)
                continue;
            s->metrics_env |= strlen (k) > 20 && strcmp (k + strlen (k) - 13, "_METRICS_HOST") == 0;
            char *value = s_rewrite (v, NULL);
            char pair [600];
            snprintf (pair, sizeof pair, "%s=%s", k, value);
            free (value);
            if (s->envc < MAX_ARGS)
                s->env [s->envc++] = strdup (pair);
        }
        yaml_node_t *ports = s_get (&doc, svc, "ports");
        if (ports && ports->type == YAML_SEQUENCE_NODE)
            for (yaml_node_item_t *i = ports->data.sequence.items.start; i < ports->data.sequence.items.top; i++) {
                const char *v = (char *) yaml_document_get_node (&doc, *i)->data.scalar.value;
                cr_expect (strncmp (v, "127.0.0.1:", 10) == 0, "%s publishes %s on loopback only", s->name, v);
                s->published++;
            }
        if (s->image [0]) {
            //  Not a sluice program: its ports are mapped like the others'.
            if (strstr (s->image, "postgres"))
                loopback_port (5432);
            if (strstr (s->image, "redis"))
                loopback_port (6379);
            continue;
        }
        cr_assert (cmd && cmd->type == YAML_SEQUENCE_NODE, "%s has a command list", s->name);
        const char *prev = NULL;
        for (yaml_node_item_t *i = cmd->data.sequence.items.start; i < cmd->data.sequence.items.top; i++) {
            const char *v = (char *) yaml_document_get_node (&doc, *i)->data.scalar.value;
            if (i == cmd->data.sequence.items.start) {
                cr_assert (strncmp (v, "sluice-", 7) == 0, "%s runs a sluice program", s->name);
                snprintf (s->program, sizeof s->program, "%s", v + 7);
            }
            else
                s->args [s->argc++] = s_rewrite (v, prev);
            prev = v;
        }
        yaml_node_t *volumes = s_get (&doc, svc, "volumes");
        if (volumes && volumes->type == YAML_SEQUENCE_NODE)
            for (yaml_node_item_t *i = volumes->data.sequence.items.start; i < volumes->data.sequence.items.top; i++) {
                const char *v = (char *) yaml_document_get_node (&doc, *i)->data.scalar.value;
                if (strcmp (v, "keys:" KEYS_PATH ":ro") == 0)
                    s->keys_ro = true;
            }
        yaml_node_t *test = s_get (&doc, s_get (&doc, svc, "healthcheck"), "test");
        if (test && test->type == YAML_SEQUENCE_NODE) {
            yaml_node_item_t *last = test->data.sequence.items.top - 1;
            char *url = loopback_rewrite ((char *) yaml_document_get_node (&doc, *last)->data.scalar.value, NULL, KEYS_PATH, s_keys);
            snprintf (s->health_url, sizeof s->health_url, "%s", url);
            free (url);
        }
    }
    //  Services others wait for with condition: service_completed_successfully.
    for (yaml_node_pair_t *p = list->data.mapping.pairs.start; p < list->data.mapping.pairs.top; p++) {
        yaml_node_t *deps = s_get (&doc, yaml_document_get_node (&doc, p->value), "depends_on");
        if (!deps || deps->type != YAML_MAPPING_NODE)
            continue;
        for (yaml_node_pair_t *d = deps->data.mapping.pairs.start; d < deps->data.mapping.pairs.top; d++) {
            yaml_node_t *cond = s_get (&doc, yaml_document_get_node (&doc, d->value), "condition");
            const char *dep = (char *) yaml_document_get_node (&doc, d->key)->data.scalar.value;
            if (cond && strcmp ((char *) cond->data.scalar.value, "service_completed_successfully") == 0)
                for (int i = 0; i < n; i++)
                    if (strcmp (services [i].name, dep) == 0)
                        services [i].oneshot = true;
        }
    }
    yaml_node_t *bus = s_get (&doc, s_get (&doc, yaml_document_get_root_node (&doc), "networks"), "bus");
    yaml_node_t *internal = s_get (&doc, bus, "internal");
    cr_expect (internal && strcmp ((char *) internal->data.scalar.value, "true") == 0,
               "the bus network is internal");
    yaml_document_delete (&doc);
    yaml_parser_delete (&parser);
    fclose (f);
    return n;
}

static int
s_url_port (const char *url)
{
    const char *c = strstr (url, "127.0.0.1:");
    return c ? atoi (c + 10) : 0;
}

Test (compose, the_compose_commands_run_and_serve)
{
    service_t services [MAX_SERVICES];
    int n;
    char dir [] = "/tmp/sluice-compose-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    //  The volumes start empty, their folders made as the image makes them:
    //  the keygen service fills them.
    snprintf (s_root, sizeof s_root, "%s/lib", dir);
    snprintf (s_keys, sizeof s_keys, "%s/keys", s_root);
    const char *volumes [] = { "", "keys", "clients", "first-key", "signing", "checkpoints", "audit" };
    for (size_t v = 0; v < sizeof volumes / sizeof volumes [0]; v++) {
        char path [512];
        snprintf (path, sizeof path, "%s/%s", s_root, volumes [v]);
        cr_assert_eq (mkdir (path, 0700), 0);
    }
    n = s_load (services);
    cr_assert_geq (n, 10, "the keygen, the mock, the five processes, the audit, its database and redis");
    int oneshots = 0, on_bus = 0;
    for (int i = 0; i < n; i++) {
        bool bus = false;
        for (int a = 0; a < services [i].argc; a++)
            bus |= strcmp (services [i].args [a], "--keys") == 0;
        cr_expect (!bus || services [i].keys_ro, "%s reads the key volume read-only", services [i].name);
        cr_expect (services [i].published == 0 || strcmp (services [i].program, "gateway") == 0
                || strcmp (services [i].program, "audit") == 0 || strstr (services [i].image, "prometheus"),
                   "%s publishes no port", services [i].name);
        if (services [i].profiled)
            continue;
        cr_expect (!bus || services [i].metrics_env, "%s serves /metrics on its bus address, for Prometheus",
                   services [i].name);
        on_bus += bus;
        oneshots += services [i].oneshot;
    }
    cr_expect_eq (on_bus, 6, "the five processes of the bus and the audit take keys");
    cr_expect_eq (oneshots, 1, "the keygen runs first");
    proc_t *procs [MAX_SERVICES] = { 0 };
    //  The database the audit waits for: a cluster on its loopback port.
    pgtmp_t pg = { 0 };
    for (int i = 0; i < n; i++) {
        if (!strstr (services [i].image, "postgres"))
            continue;
        char reason [256];
        if (pgtmp_start_tcp (&pg, loopback_port (5432), reason, sizeof reason))
            cr_skip_test ("PostgreSQL, for the compose file's postgres service: %s", reason);
        cr_expect_str_eq (services [i].pg_user, "sluice", "the cluster's superuser is the service's user");
        char *error = NULL;
        sl_store_t *admin = sl_store_open_raw (pg.dsn, &error);
        cr_assert_not_null (admin, "%s", error ? error : "");
        char sql [96];
        snprintf (sql, sizeof sql, "CREATE DATABASE %s", services [i].pg_db);
        cr_assert_eq (sl_store_exec (admin, sql, NULL, 0, NULL), 0, "%s", sl_store_error (admin));
        sl_store_close (&admin);
    }
    //  The gateways' shared limits: a redis-server on its loopback port.
    redistmp_t redis = { 0 };
    for (int i = 0; i < n; i++)
        if (strstr (services [i].image, "redis"))
            cr_assert (redistmp_start (&redis, loopback_port (6379)), "redis-server runs (make deps installs it)");
    //  One-shot services first, each to its successful end: the set-up
    //  script of the image, with the programs built here and the volumes
    //  in s_root.
    for (int i = 0; i < n; i++) {
        if (!services [i].oneshot)
            continue;
        cr_assert_str_eq (services [i].program, "compose-init", "%s runs the image's set-up", services [i].name);
        const char *bin = getenv ("SLUICE_BIN_DIR");
        char cmd [2048];
        snprintf (cmd, sizeof cmd, "SLUICE_COMPOSE_ROOT='%s' PATH='%s':\"$PATH\" deploy/compose/sluice-compose-init "
                                   "> '%s/%s.log' 2>&1", s_root, bin ? bin : "build/bin", dir, services [i].name);
        int rc = system (cmd);
        if (rc != 0) {
            snprintf (cmd, sizeof cmd, "cat '%s/%s.log' >&2", dir, services [i].name);
            cr_expect_eq (system (cmd), 0);
        }
        cr_assert_eq (rc, 0, "%s completes successfully", services [i].name);
    }
    for (int i = 0; i < n; i++) {
        if (services [i].oneshot || services [i].image [0] || services [i].profiled)
            continue;
        services [i].args [services [i].argc] = NULL;
        //  Its SLUICE_* environment, for this process only.
        for (int e = 0; e < services [i].envc; e++)
            putenv (services [i].env [e]);
        procs [i] = proc_start (dir, services [i].program, (const char *const *) services [i].args);
        for (int e = 0; e < services [i].envc; e++) {
            char name [64];
            snprintf (name, sizeof name, "%.*s", (int) strcspn (services [i].env [e], "="), services [i].env [e]);
            unsetenv (name);
        }
        cr_assert_not_null (procs [i]);
    }
    for (int i = 0; i < n; i++) {
        if (services [i].oneshot || services [i].image [0] || services [i].profiled)
            continue;
        bool up = proc_wait_log (procs [i], "\"started\"", NULL, NULL, 0, 15000);
        if (!up)
            proc_dump (procs [i]);
        cr_assert (up, "%s started with its compose flags", services [i].name);
    }
    //  Every healthcheck answers.
    for (int i = 0; i < n; i++) {
        if (!services [i].health_url [0] || services [i].image [0] || services [i].profiled)
            continue;
        sl_buf_t body = { 0 };
        int port = s_url_port (services [i].health_url);
        int status = 0;
        //  A health URL may lag the "started" line by a reactor turn: bounded retry.
        for (int attempt = 0; attempt < 100 && status != 200; attempt++) {
            sl_buf_reset (&body);
            status = http_request (port, "GET", "/healthz", NULL, NULL, &body, 2000);
            if (status != 200)
                usleep (20000);
        }
        cr_expect_eq (status, 200, "%s healthcheck %s", services [i].name, services [i].health_url);
        sl_buf_free (&body);
    }
    //  A request through the gateway's published port, with the image's
    //  policy: refused without a key, served with the first one.
    int gateway_port = loopback_port (8080);
    const char *req = "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    sl_buf_t body = { 0 }, key = { 0 };
    cr_expect_eq (http_request (gateway_port, "POST", "/v1/chat/completions", req, NULL, &body, 20000), 401,
                  "the gateway refuses a request without a client key");
    sl_buf_reset (&body);
    char key_path [512], auth [512];
    snprintf (key_path, sizeof key_path, "%s/first-key/key", s_root);
    cr_assert (harness_read (key_path, &key), "the keygen service wrote the first client key");
    snprintf (auth, sizeof auth, "Authorization: Bearer %.*s", (int) strcspn (sl_buf_cstr (&key), "\n"),
              sl_buf_cstr (&key));
    sl_buf_free (&key);
    const char *headers [] = { auth, NULL };
    cr_expect_eq (http_request (gateway_port, "POST", "/v1/chat/completions", req, headers, &body, 20000), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.call_count, 1);
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].name), "get_weather");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "sluice blocked a call to run_shell"));
    cr_expect (cs.done_last);
    chat_stream_free (&cs);
    sl_buf_free (&body);
    //  The audit recorded it in PostgreSQL; its console shows it.
    audit_proc_t console = { .console_port = loopback_port (8081) };
    cr_expect_eq (audit_wait_streams (&console, "rule=no-rm-rf&state=ended", 1, 20000), 1,
                  "the audit's console finds the blocked call by its rule");
    json_t *meta = audit_get (&console, "/api/meta");
    cr_expect_str_eq (json_string_value (json_object_get (meta, "store")), "postgres");
    json_decref (meta);
    for (int i = n - 1; i >= 0; i--) {
        if (procs [i]) {
            int rc = proc_stop (procs [i], 10000);
            if (rc != 0)
                proc_dump (procs [i]);
            cr_expect_eq (rc, 0, "%s exits cleanly", services [i].name);
            unlink (procs [i]->log_path);
            free (procs [i]);
        }
        for (int a = 0; a < services [i].argc; a++)
            free (services [i].args [a]);
        for (int e = 0; e < services [i].envc; e++)
            free (services [i].env [e]);
    }
    pgtmp_stop (&pg);
    redistmp_stop (&redis);
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
