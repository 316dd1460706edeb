/*  Integration: the containers of deploy/kubernetes, run as they are.

    No cluster runs here, so this test builds the small overlay with
    kubectl kustomize and, for every Deployment, takes its container's
    command, arguments and environment exactly as the manifests give them,
    and starts the same program on loopback: Service names become
    127.0.0.1, every container port a free local port (the same manifest
    port always maps to the same local one), the image's policy path
    deploy/policy.yaml, and $(VAR) in an argument is expanded from the
    container's environment as the kubelet does. The environment comes from
    the overlay's ConfigMaps and from Secrets: the bus keys are the real
    `sluice-keygen --kubernetes` output, each pod's Secret written out as
    the directory its volume mounts (its own secret key and the public
    ones); the client keys file is made with sluice-keys as an operator
    makes it, its Secret written out where the gateway and the judge mount
    it (every path under a Secret's mount becomes the local directory);
    the audit's DSN is a PostgreSQL cluster the test starts
    (tests/pgtmp.h) and the gateways' Redis URL a redis-server
    (tests/redistmp.h). A reference to something missing that is not
    optional fails the test, as it would fail the pod.

    Then every probe answers on the port it names (/healthz, /readyz), a
    stream goes through the gateway's Service port with the client's key
    and over the bus to the mock and back, judged, and the audit's console
    shows it; `sluice-audit verify` in the audit pod's environment finds
    its signing key and its checkpoint file (a PersistentVolumeClaim, a
    directory here) by default, and the chain intact and sealed. The
    gateway's own --http-host (0.0.0.0) is kept once, in a network
    namespace of the test's (netns.h): with the manifests' keys it starts
    there (without keys it would refuse to). It also checks
    what the manifests promise: non-root, read-only root, no
    capabilities, the grace period above --drain-ms, each pod's key Secret
    its own role's. Skipped, with the reason, without kubectl or
    PostgreSQL's programs.
*/
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "tests/pgtmp.h"
#include "tests/redistmp.h"
#include "tests/secretfile.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/integration/loopback.h"
#include "tests/integration/netns.h"
#include "tests/integration/sse_client.h"

#define OVERLAY "deploy/kubernetes/overlays/small"
#define NAMESPACE "sluice"
#define MAX_PODS 16
#define MAX_ARGS 48
#define KEYS_PATH "/var/lib/sluice/keys"
#define START_MS 15000                  //  a process's "started" line
#define STOP_MS 15000                   //  a drain with nothing held is quick
#define STREAM_MS 20000
#define MS_PER_S 1000
#define REDIS_PORT 6379                 //  the Redis the operator's Secret names
#define MAX_MOUNTS 4                    //  Secret and claim volumes of one pod besides its bus key
#define CLIENT_KEYS_SECRET "sluice-client-keys"
#define CLIENT_KEY_MAX 128

typedef struct {
    char name [64];                     //  the Deployment's
    char program [32];                  //  sluice-<program>
    char *args [MAX_ARGS];              //  rewritten to loopback, NULL-terminated
    int argc;
    char *env [MAX_ARGS];               //  NAME=value, rewritten
    char *raw [MAX_ARGS];               //  NAME=value as the cluster gives it
    int envc;
    char keys_dir [256];                //  where its key Secret is written out
    char mount_path [MAX_MOUNTS][128];  //  its other Secret and claim volumes: where the pod mounts them
    char mount_dir [MAX_MOUNTS][256];   //  and where they are written out here
    int mounts;
    char claim_path [128];              //  where it mounts a PersistentVolumeClaim ("" none)
    char claim_dir [256];               //  the local directory standing for it
    json_t *container;                  //  borrowed from the documents
    proc_t *proc;
} pod_t;

//  The value of a pod's environment variable as the cluster gives it, or NULL.
static const char *
s_raw_env (pod_t *pod, const char *name)
{
    size_t n = strlen (name);
    for (int e = 0; e < pod->envc; e++)
        if (strncmp (pod->raw [e], name, n) == 0 && pod->raw [e][n] == '=')
            return pod->raw [e] + n + 1;
    return NULL;
}

//  One libyaml node as JSON: plain scalars that read as numbers, booleans
//  or null are those (kubectl quotes strings that would), the rest strings.
static json_t *
s_node_json (yaml_document_t *doc, yaml_node_t *node)
{
    if (node->type == YAML_SCALAR_NODE) {
        const char *v = (const char *) node->data.scalar.value;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
            char *end;
            long long n = strtoll (v, &end, 10);
            if (*v && *end == 0)
                return json_integer (n);
            if (strcmp (v, "true") == 0 || strcmp (v, "false") == 0)
                return json_boolean (v [0] == 't');
            if (strcmp (v, "null") == 0 || strcmp (v, "~") == 0 || *v == 0)
                return json_null ();
        }
        return json_string (v);
    }
    if (node->type == YAML_SEQUENCE_NODE) {
        json_t *array = json_array ();
        for (yaml_node_item_t *i = node->data.sequence.items.start; i < node->data.sequence.items.top; i++)
            json_array_append_new (array, s_node_json (doc, yaml_document_get_node (doc, *i)));
        return array;
    }
    json_t *object = json_object ();
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++)
        json_object_set_new (object, (const char *) yaml_document_get_node (doc, p->key)->data.scalar.value,
                             s_node_json (doc, yaml_document_get_node (doc, p->value)));
    return object;
}

//  Every document of a command's output, appended to objects. The
//  command's exit status.
static int
s_load (const char *command, json_t *objects)
{
    FILE *f = popen (command, "r");
    cr_assert_not_null (f, "%s", command);
    yaml_parser_t parser;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_file (&parser, f);
    for (;;) {
        yaml_document_t doc;
        cr_assert (yaml_parser_load (&parser, &doc), "%s: its output parses", command);
        yaml_node_t *root = yaml_document_get_root_node (&doc);
        if (!root) {
            yaml_document_delete (&doc);
            break;
        }
        json_array_append_new (objects, s_node_json (&doc, root));
        yaml_document_delete (&doc);
    }
    yaml_parser_delete (&parser);
    return pclose (f);
}

//  A path of keys ("spec.template.spec") into o, or NULL (borrowed).
static json_t *
s_at (json_t *o, const char *path)
{
    char key [64];
    while (o && *path) {
        size_t n = strcspn (path, ".");
        snprintf (key, sizeof key, "%.*s", (int) n, path);
        o = json_object_get (o, key);
        path += n + (path [n] == '.');
    }
    return o;
}

static const char *
s_str (json_t *o, const char *path)
{
    return json_string_value (s_at (o, path));
}

//  The object of this kind and name, or NULL (borrowed).
static json_t *
s_find (json_t *objects, const char *kind, const char *name)
{
    size_t i;
    json_t *o;
    json_array_foreach (objects, i, o)
        if (strcmp (s_str (o, "kind"), kind) == 0 && strcmp (s_str (o, "metadata.name"), name) == 0)
            return o;
    return NULL;
}

//  $(NAME) in an argument, expanded from the container's environment as
//  the kubelet does (the values as given, rewritten with the argument
//  after); a name it does not define is left as written.
static char *
s_expand (const char *arg, pod_t *pod)
{
    sl_buf_t out = { 0 };
    const char *p = arg;
    while (*p) {
        const char *close = strncmp (p, "$(", 2) == 0 ? strchr (p, ')') : NULL;
        const char *value = NULL;
        for (int e = 0; close && e < pod->envc && !value; e++) {
            size_t len = (size_t) (close - p - 2);
            if (strncmp (pod->raw [e], p + 2, len) == 0 && pod->raw [e][len] == '=')
                value = pod->raw [e] + len + 1;
        }
        if (value) {
            sl_buf_puts (&out, value);
            p = close + 1;
        }
        else
            sl_buf_putc (&out, *p++);
    }
    char *s = strdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return s;
}

//  A Secret's data value decoded (base64), or its stringData value: the
//  caller's to free; NULL when it has no such key.
static char *
s_secret_value (json_t *secret, const char *key)
{
    const char *plain = json_string_value (json_object_get (json_object_get (secret, "stringData"), key));
    if (plain)
        return strdup (plain);
    const char *b64 = json_string_value (json_object_get (json_object_get (secret, "data"), key));
    if (!b64)
        return NULL;
    size_t room = strlen (b64) + 1, size = 0;
    char *value = calloc (1, room);
    cr_assert_eq (sodium_base642bin ((unsigned char *) value, room - 1, b64, strlen (b64), NULL, &size, NULL,
                                     sodium_base64_VARIANT_ORIGINAL), 0, "%s is base64", key);
    return value;
}

//  The value of one env entry (the caller's to free): value, or valueFrom
//  a ConfigMap or Secret key among objects. NULL when an optional
//  reference finds nothing; a missing reference that is not optional
//  fails, as the pod would.
static char *
s_env_value (json_t *objects, json_t *entry, const char *pod)
{
    if (json_object_get (entry, "value"))
        return strdup (s_str (entry, "value"));
    json_t *ref = s_at (entry, "valueFrom.configMapKeyRef");
    const char *kind = "ConfigMap";
    if (!ref) {
        ref = s_at (entry, "valueFrom.secretKeyRef");
        kind = "Secret";
    }
    cr_assert_not_null (ref, "%s: %s comes from a value, a ConfigMap or a Secret", pod, s_str (entry, "name"));
    json_t *source = s_find (objects, kind, s_str (ref, "name"));
    char *value = NULL;
    if (source && strcmp (kind, "Secret") == 0)
        value = s_secret_value (source, s_str (ref, "key"));
    else
    if (source) {
        const char *text = json_string_value (json_object_get (json_object_get (source, "data"), s_str (ref, "key")));
        value = text ? strdup (text) : NULL;
    }
    if (!value)
        cr_assert (json_is_true (json_object_get (ref, "optional")), "%s: %s %s has %s", pod, kind,
                   s_str (ref, "name"), s_str (ref, "key"));
    return value;
}

//  Write a Secret's data (and stringData) out as the files its volume
//  mounts.
static void
s_mount_secret (json_t *secret, const char *dir)
{
    cr_assert_eq (mkdir (dir, 0700), 0, "%s", dir);
    const char *file;
    json_t *value;
    json_object_foreach (s_at (secret, "data"), file, value)
        secretfile_write (dir, file, json_string_value (value));
    json_object_foreach (s_at (secret, "stringData"), file, value)
        cr_assert_eq (harness_write (dir, file, json_string_value (value)), 0, "%s/%s", dir, file);
}

//  A path under one of the pod's Secret mounts, as the local directory
//  that stands for it (the caller's to free); anything else as it is.
static char *
s_mounted (const pod_t *pod, const char *value)
{
    for (int m = 0; m < pod->mounts; m++) {
        size_t n = strlen (pod->mount_path [m]);
        if (strncmp (value, pod->mount_path [m], n) == 0 && (value [n] == 0 || value [n] == '/')) {
            char local [512];
            snprintf (local, sizeof local, "%s%s", pod->mount_dir [m], value + n);
            return strdup (local);
        }
    }
    return strdup (value);
}

//  The client keys file an operator makes (docs/kubernetes.md): one key
//  from sluice-keys, its entry under keys:, as the Secret the gateway and
//  the judge mount. The key goes to key.
static json_t *
s_client_keys_secret (char *key, size_t size)
{
    char command [512];
    snprintf (command, sizeof command, "'%s/sluice-keys' new --team trial --user kube", getenv ("SLUICE_BIN_DIR"));
    FILE *f = popen (command, "r");
    cr_assert_not_null (f, "%s", command);
    sl_buf_t file = { 0 };
    sl_buf_puts (&file, "version: 1\nkeys:\n");
    char line [1024];
    cr_assert_not_null (fgets (line, sizeof line, f), "sluice-keys prints the key first");
    snprintf (key, size, "%.*s", (int) strcspn (line, "\n"), line);
    while (fgets (line, sizeof line, f))
        sl_buf_puts (&file, line);
    cr_assert_eq (pclose (f), 0, "sluice-keys new succeeds");
    json_t *secret = json_pack ("{s:s, s:{s:s}, s:{s:s}}", "kind", "Secret", "metadata", "name", CLIENT_KEYS_SECRET,
                                "stringData", "keys.yaml", sl_buf_cstr (&file));
    sl_buf_free (&file);
    return secret;
}

//  The local port of a probe's or a Service's port: a number, or the name
//  of one of the container's ports.
static int
s_container_port (json_t *container, json_t *port)
{
    if (json_is_integer (port))
        return loopback_port ((int) json_integer_value (port));
    size_t i;
    json_t *p;
    json_array_foreach (json_object_get (container, "ports"), i, p)
        if (strcmp (s_str (p, "name"), json_string_value (port)) == 0)
            return loopback_port ((int) json_integer_value (json_object_get (p, "containerPort")));
    cr_assert_fail ("no container port named %s", json_string_value (port));
    return 0;
}

//  The local port a Service's first port reaches: the targetPort of the
//  pod its selector picks.
static int
s_service_port (json_t *objects, const char *name, pod_t *pods, int n)
{
    json_t *service = s_find (objects, "Service", name);
    cr_assert_not_null (service, "the Service %s", name);
    const char *selected = json_string_value (json_object_get (s_at (service, "spec.selector"),
                                                               "app.kubernetes.io/name"));
    cr_assert_not_null (selected, "%s selects pods by name", name);
    for (int p = 0; p < n; p++)
        if (strcmp (pods [p].name, selected) == 0)
            return s_container_port (pods [p].container,
                                     s_at (json_array_get (s_at (service, "spec.ports"), 0), "targetPort"));
    cr_assert_fail ("the Service %s selects no Deployment's pods", name);
    return 0;
}

//  What the manifests promise of every pod, checked on the objects.
static void
s_check_pod (json_t *deployment, pod_t *pod)
{
    json_t *spec = s_at (deployment, "spec.template.spec");
    json_t *c = pod->container;
    cr_expect (json_is_true (s_at (spec, "securityContext.runAsNonRoot")), "%s runs as non-root", pod->name);
    cr_expect_gt (json_integer_value (s_at (spec, "securityContext.runAsUser")), 0, "%s: a numeric user",
                  pod->name);
    cr_expect_str_eq (s_str (spec, "securityContext.seccompProfile.type"), "RuntimeDefault");
    cr_expect (json_is_true (s_at (c, "securityContext.readOnlyRootFilesystem")), "%s: read-only root", pod->name);
    cr_expect (json_is_false (s_at (c, "securityContext.allowPrivilegeEscalation")), "%s", pod->name);
    cr_expect_str_eq (json_string_value (json_array_get (s_at (c, "securityContext.capabilities.drop"), 0)), "ALL",
                      "%s drops every capability", pod->name);
    cr_expect_str_eq (s_str (c, "livenessProbe.httpGet.path"), "/healthz", "%s", pod->name);
    cr_expect_str_eq (s_str (c, "readinessProbe.httpGet.path"), "/readyz", "%s", pod->name);
    cr_expect_not_null (s_at (c, "resources.requests.cpu"), "%s requests CPU", pod->name);
    cr_expect_not_null (s_at (c, "resources.limits.memory"), "%s has a memory limit", pod->name);
    json_t *annotations = s_at (deployment, "spec.template.metadata.annotations");
    cr_expect_str_eq (json_string_value (json_object_get (annotations, "prometheus.io/scrape")), "true",
                      "%s is scraped", pod->name);
    const char *scrape_port = json_string_value (json_object_get (annotations, "prometheus.io/port"));
    cr_assert_not_null (scrape_port, "%s names its metrics port", pod->name);
    //  The grace period outlasts the drain the process is told. (The mock,
    //  a trial's upstream, holds no stream of sluice's to drain.)
    if (strcmp (pod->program, "mock") == 0)
        return;
    long drain_ms = 0;
    for (int a = 0; a + 1 < pod->argc; a++)
        if (strcmp (pod->args [a], "--drain-ms") == 0)
            drain_ms = atol (pod->args [a + 1]);
    cr_expect_gt (drain_ms, 0, "%s is told its --drain-ms", pod->name);
    cr_expect_gt (json_integer_value (json_object_get (spec, "terminationGracePeriodSeconds")) * MS_PER_S, drain_ms,
                  "%s: the kubelet waits longer than the drain", pod->name);
}

//  One probe of the container, on its local port: its HTTP status.
static int
s_probe (pod_t *pod, const char *which)
{
    json_t *get = s_at (json_object_get (pod->container, which), "httpGet");
    cr_assert_not_null (get, "%s has a %s", pod->name, which);
    int port = s_container_port (pod->container, json_object_get (get, "port"));
    int status = 0;
    sl_buf_t body = { 0 };
    //  The port may lag the "started" line by a reactor turn: bounded retry.
    for (int attempt = 0; attempt < 100 && status != 200; attempt++) {
        sl_buf_reset (&body);
        status = http_request (port, "GET", s_str (get, "path"), NULL, NULL, &body, 2000);
        if (status != 200)
            usleep (20000);
    }
    sl_buf_free (&body);
    return status;
}

//  The gateway once more with the --http-host its manifest gives (every
//  address), in a network namespace of its own so that nothing opens on
//  the machine's network: a gateway without keys there refuses to start,
//  so this is the manifests' keys at work.
static void
s_gateway_as_written (const char *dir, pod_t *pods, int n)
{
    char why [256];
    if (!netns_available (why, sizeof why)) {
        cr_log_warn ("the gateway on its manifest's own address is not run: no network namespace (%s)", why);
        return;
    }
    for (int p = 0; p < n; p++) {
        if (strcmp (pods [p].program, "gateway") != 0)
            continue;
        json_t *written = json_object_get (pods [p].container, "args");
        const char *args [MAX_ARGS];
        bool kept = false;
        for (int a = 0; a < pods [p].argc; a++) {
            const char *before = a ? json_string_value (json_array_get (written, (size_t) a - 1)) : "";
            kept |= strcmp (before, "--http-host") == 0;
            args [a] = strcmp (before, "--http-host") == 0 ? json_string_value (json_array_get (written, (size_t) a))
                                                           : pods [p].args [a];
        }
        args [pods [p].argc] = NULL;
        cr_assert (kept, "the gateway's manifest gives its --http-host");
        for (int e = 0; e < pods [p].envc; e++)
            putenv (pods [p].env [e]);
        proc_t *g = netns_proc_start (dir, "gateway", "gateway-as-written", args);
        for (int e = 0; e < pods [p].envc; e++) {
            char name [64];
            snprintf (name, sizeof name, "%.*s", (int) strcspn (pods [p].env [e], "="), pods [p].env [e]);
            unsetenv (name);
        }
        cr_assert_not_null (g);
        bool up = proc_wait_log (g, "\"started\"", NULL, NULL, 0, START_MS);
        if (!up)
            proc_dump (g);
        cr_expect (up, "the gateway starts on its manifest's own address, with the manifests' keys");
        int rc = proc_stop (g, STOP_MS);
        if (rc != 0)
            proc_dump (g);
        cr_expect_eq (rc, 0, "it stops cleanly");
        unlink (g->log_path);
        free (g);
    }
}

Test (kubernetes, the_small_overlay_runs_as_written, .timeout = 120)
{
    if (system ("command -v kubectl >/dev/null 2>&1") != 0)
        cr_skip_test ("kubectl is not installed (make deps installs kubernetes-client)");
    char dir [] = "/tmp/sluice-kube-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    pgtmp_t pg = { 0 };
    char reason [256];
    if (pgtmp_start (&pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL, for the audit's DSN Secret: %s", reason);
    //  Redis where the Secret below says, on its loopback port.
    redistmp_t redis = { 0 };
    cr_assert (redistmp_start (&redis, loopback_port (REDIS_PORT)), "redis-server runs (make deps installs it)");

    json_t *objects = json_array ();
    cr_assert_eq (s_load ("kubectl kustomize " OVERLAY " 2>/dev/null", objects), 0, OVERLAY " builds");
    //  The Secrets an operator makes: the keys with sluice-keygen itself,
    //  the DSN and the Redis URL by hand.
    char command [1024];
    snprintf (command, sizeof command, "'%s/sluice-keygen' --kubernetes " NAMESPACE " --dir '%s/keygen' 2>/dev/null",
              getenv ("SLUICE_BIN_DIR"), dir);
    size_t before = json_array_size (objects);
    cr_assert_eq (s_load (command, objects), 0, "sluice-keygen --kubernetes succeeds");
    cr_assert_eq (json_array_size (objects) - before, 6, "one Secret per role");
    json_array_append_new (objects, json_pack ("{s:s, s:{s:s}, s:{s:s}}", "kind", "Secret", "metadata", "name",
                                               "sluice-audit-dsn", "stringData", "dsn", pg.dsn));
    json_array_append_new (objects, json_pack ("{s:s, s:{s:s}, s:{s:s}}", "kind", "Secret", "metadata", "name",
                                               "sluice-redis-url", "stringData", "url", "redis://redis:6379/0"));
    char client_key [CLIENT_KEY_MAX];
    json_array_append_new (objects, s_client_keys_secret (client_key, sizeof client_key));

    pod_t pods [MAX_PODS] = { 0 };
    int n = 0;
    size_t i;
    json_t *o;
    json_array_foreach (objects, i, o) {
        if (strcmp (json_string_value (json_object_get (o, "kind")), "Deployment") != 0)
            continue;
        cr_assert_lt (n, MAX_PODS);
        pod_t *pod = &pods [n++];
        snprintf (pod->name, sizeof pod->name, "%s", s_str (o, "metadata.name"));
        json_t *containers = s_at (o, "spec.template.spec.containers");
        cr_assert_eq (json_array_size (containers), 1, "%s: one container", pod->name);
        cr_expect_eq (json_integer_value (s_at (o, "spec.replicas")), 1, "the small overlay: one pod of %s",
                      pod->name);
        pod->container = json_array_get (containers, 0);
        const char *program = json_string_value (json_array_get (json_object_get (pod->container, "command"), 0));
        cr_assert (program && strncmp (program, "sluice-", 7) == 0, "%s runs a sluice program", pod->name);
        snprintf (pod->program, sizeof pod->program, "%s", program + 7);
        //  Its key Secret, where it mounts it: its own role's, read-only.
        snprintf (pod->keys_dir, sizeof pod->keys_dir, "%s/%s-keys", dir, s_str (o, "metadata.name"));
        size_t m;
        json_t *mount;
        json_array_foreach (json_object_get (pod->container, "volumeMounts"), m, mount) {
            //  A PersistentVolumeClaim: a directory of the pod's own here.
            size_t c;
            json_t *claimed;
            json_array_foreach (s_at (o, "spec.template.spec.volumes"), c, claimed)
                if (strcmp (s_str (claimed, "name"), s_str (mount, "name")) == 0
                &&  s_at (claimed, "persistentVolumeClaim")) {
                    const char *claim = s_str (claimed, "persistentVolumeClaim.claimName");
                    cr_expect_not_null (s_find (objects, "PersistentVolumeClaim", claim), "%s: the claim %s is made",
                                        pod->name, claim);
                    snprintf (pod->claim_path, sizeof pod->claim_path, "%s", s_str (mount, "mountPath"));
                    char local [sizeof pod->claim_dir];
                    snprintf (local, sizeof local, "%s/%s-%s", dir, s_str (o, "metadata.name"), claim);
                    memcpy (pod->claim_dir, local, sizeof local);
                    cr_assert_eq (mkdir (pod->claim_dir, 0700), 0, "%s", pod->claim_dir);
                    cr_assert_lt (pod->mounts, MAX_MOUNTS);
                    memcpy (pod->mount_path [pod->mounts], pod->claim_path, sizeof pod->mount_path [0]);
                    memcpy (pod->mount_dir [pod->mounts++], pod->claim_dir, sizeof pod->mount_dir [0]);
                }
            if (strcmp (s_str (mount, "mountPath"), KEYS_PATH) != 0) {
                //  Another Secret (the client keys): written out, its
                //  paths rewritten.
                size_t v;
                json_t *volume;
                json_array_foreach (s_at (o, "spec.template.spec.volumes"), v, volume) {
                    const char *secret_name = s_str (volume, "secret.secretName");
                    if (strcmp (s_str (volume, "name"), s_str (mount, "name")) != 0 || !secret_name)
                        continue;
                    json_t *secret = s_find (objects, "Secret", secret_name);
                    cr_assert_not_null (secret, "%s mounts the Secret %s", pod->name, secret_name);
                    cr_assert_lt (pod->mounts, MAX_MOUNTS);
                    cr_expect (json_is_true (json_object_get (mount, "readOnly")), "%s mounts %s read-only",
                               pod->name, secret_name);
                    snprintf (pod->mount_path [pod->mounts], sizeof pod->mount_path [0], "%s",
                              s_str (mount, "mountPath"));
                    char local [sizeof pod->mount_dir [0]];
                    snprintf (local, sizeof local, "%s/%s-%s", dir, pod->name, s_str (volume, "name"));
                    memcpy (pod->mount_dir [pod->mounts], local, sizeof local);
                    s_mount_secret (secret, pod->mount_dir [pod->mounts++]);
                }
                continue;
            }
            cr_expect (json_is_true (json_object_get (mount, "readOnly")), "%s mounts its keys read-only", pod->name);
            size_t v;
            json_t *volume;
            json_array_foreach (s_at (o, "spec.template.spec.volumes"), v, volume) {
                if (strcmp (s_str (volume, "name"), s_str (mount, "name")) != 0)
                    continue;
                char want [64];
                snprintf (want, sizeof want, "sluice-keys-%s", pod->program);
                cr_expect_str_eq (s_str (volume, "secret.secretName"), want, "%s mounts its own role's key",
                                  pod->name);
                json_t *secret = s_find (objects, "Secret", s_str (volume, "secret.secretName"));
                cr_assert_not_null (secret, "sluice-keygen wrote %s", s_str (volume, "secret.secretName"));
                s_mount_secret (secret, pod->keys_dir);
            }
        }
        //  Its environment, then its arguments with $(VAR) expanded.
        size_t e;
        json_t *entry;
        json_array_foreach (json_object_get (pod->container, "env"), e, entry) {
            char *value = s_env_value (objects, entry, pod->name);
            if (!value)
                continue;
            char *mounted = s_mounted (pod, value);
            char *local = loopback_rewrite (mounted, NULL, KEYS_PATH, pod->keys_dir);
            free (mounted);
            char pair [1024];
            cr_assert_lt (pod->envc, MAX_ARGS);
            snprintf (pair, sizeof pair, "%s=%s", s_str (entry, "name"), value);
            pod->raw [pod->envc] = strdup (pair);
            snprintf (pair, sizeof pair, "%s=%s", s_str (entry, "name"), local);
            pod->env [pod->envc++] = strdup (pair);
            free (value);
            free (local);
        }
        const char *prev = NULL;
        size_t a;
        json_t *arg;
        json_array_foreach (json_object_get (pod->container, "args"), a, arg) {
            cr_assert_lt (pod->argc, MAX_ARGS - 1);
            char *expanded = s_expand (json_string_value (arg), pod);
            char *mounted = s_mounted (pod, expanded);
            pod->args [pod->argc++] = loopback_rewrite (mounted, prev, KEYS_PATH, pod->keys_dir);
            free (mounted);
            free (expanded);
            prev = json_string_value (arg);
        }
        s_check_pod (o, pod);
    }
    cr_assert_eq (n, 7, "the five processes of the bus, the audit and the mock");
    for (int p = 0; p < n; p++) {
        for (int e = 0; e < pods [p].envc; e++)
            putenv (pods [p].env [e]);
        pods [p].proc = proc_start (dir, pods [p].program, (const char *const *) pods [p].args);
        for (int e = 0; e < pods [p].envc; e++) {
            char name [64];
            snprintf (name, sizeof name, "%.*s", (int) strcspn (pods [p].env [e], "="), pods [p].env [e]);
            unsetenv (name);
        }
        cr_assert_not_null (pods [p].proc, "%s starts", pods [p].name);
    }
    for (int p = 0; p < n; p++) {
        if (strcmp (pods [p].program, "mock") == 0)
            continue;                   //  the mock says nothing when it starts; its probes tell
        bool up = proc_wait_log (pods [p].proc, "\"started\"", NULL, NULL, 0, START_MS);
        if (!up)
            proc_dump (pods [p].proc);
        cr_assert (up, "%s started with its manifest's flags", pods [p].name);
    }
    for (int p = 0; p < n; p++) {
        cr_expect_eq (s_probe (&pods [p], "livenessProbe"), 200, "%s: liveness", pods [p].name);
        cr_expect_eq (s_probe (&pods [p], "readinessProbe"), 200, "%s: readiness", pods [p].name);
    }
    //  A stream through the gateway's Service, with the image's policy.
    int gateway_port = s_service_port (objects, "gateway", pods, n);
    const char *req = "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (gateway_port, "POST", "/v1/chat/completions", req, NULL, &body, STREAM_MS), 401,
                  "the gateway asks for a key: %s", sl_buf_cstr (&body));
    sl_buf_reset (&body);
    char auth [CLIENT_KEY_MAX + 32];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", client_key);
    const char *headers [] = { auth, NULL };
    cr_expect_eq (http_request (gateway_port, "POST", "/v1/chat/completions", req, headers, &body, STREAM_MS), 200,
                  "with the key the operator's Secret holds: %s", sl_buf_cstr (&body));
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.call_count, 1);
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].name), "get_weather");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "sluice blocked a call to run_shell"));
    cr_expect (cs.done_last, "the stream completes");
    for (int p = 0; p < n && !cs.done_last; p++)
        proc_dump (pods [p].proc);
    chat_stream_free (&cs);
    sl_buf_free (&body);
    //  The audit recorded it in PostgreSQL; the console Service shows it.
    audit_proc_t reader = { .console_port = s_service_port (objects, "console", pods, n) };
    cr_expect_eq (audit_wait_streams (&reader, "rule=no-rm-rf&state=ended", 1, STREAM_MS), 1,
                  "the audit's console finds the blocked call by its rule");
    json_t *meta = audit_get (&reader, "/api/meta");
    cr_expect_str_eq (json_string_value (json_object_get (meta, "store")), "postgres");
    json_decref (meta);
    s_gateway_as_written (dir, pods, n);

    //  The audit's evidence outside the database: its signing key from its
    //  own Secret, its checkpoint file on a claim of its own; verify, in
    //  the pod's environment (kubectl exec), checks with both by default.
    pod_t *audit = NULL;
    for (int p = 0; p < n; p++)
        if (strcmp (pods [p].program, "audit") == 0)
            audit = &pods [p];
    cr_assert_not_null (audit);
    const char *signing = s_raw_env (audit, "SLUICE_AUDIT_SIGNING_KEY");
    const char *sink = s_raw_env (audit, "SLUICE_AUDIT_CHECKPOINT_FILE");
    cr_expect (signing && strncmp (signing, KEYS_PATH "/", strlen (KEYS_PATH) + 1) == 0,
               "the signing key comes with the audit's own key Secret");
    cr_expect (sink && *audit->claim_path && strncmp (sink, audit->claim_path, strlen (audit->claim_path)) == 0,
               "the checkpoint file is on the audit's own volume, not the database's");
    cr_expect (proc_wait_log (audit->proc, "\"chain_signing\"", NULL, NULL, 0, 1000), "the audit signs");
    for (int e = 0; e < audit->envc; e++)
        putenv (audit->env [e]);
    const char *vargs [] = { "verify", "--json", NULL };
    proc_t *v = proc_start_as (dir, "audit", "verify", vargs);
    cr_assert_not_null (v);
    cr_expect_eq (proc_wait_exit (v, STREAM_MS), 0, "verify, as configured in the pod: intact");
    sl_buf_t report = { 0 };
    cr_expect (harness_read (v->log_path, &report));
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "\"head_seal\":\"sealed\""),
                        "checked with the audit's key: %s", sl_buf_cstr (&report));
    sl_buf_free (&report);
    free (v);
    for (int e = 0; e < audit->envc; e++) {
        char name [64];
        snprintf (name, sizeof name, "%.*s", (int) strcspn (audit->env [e], "="), audit->env [e]);
        unsetenv (name);
    }

    //  Everything told to stop at once, as the kubelet does when the
    //  installation is deleted: each drains what it holds (nothing, now)
    //  and exits well inside its grace period.
    for (int p = 0; p < n; p++)
        kill (pods [p].proc->pid, SIGTERM);
    for (int p = 0; p < n; p++) {
        int rc = proc_wait_exit (pods [p].proc, STOP_MS);
        if (rc != 0)
            proc_dump (pods [p].proc);
        cr_expect_eq (rc, 0, "%s exits cleanly", pods [p].name);
        unlink (pods [p].proc->log_path);
        free (pods [p].proc);
        for (int a = 0; a < pods [p].argc; a++)
            free (pods [p].args [a]);
        for (int e = 0; e < pods [p].envc; e++) {
            free (pods [p].env [e]);
            free (pods [p].raw [e]);
        }
    }
    json_decref (objects);
    pgtmp_stop (&pg);
    redistmp_stop (&redis);
    snprintf (command, sizeof command, "rm -rf '%s'", dir);
    cr_expect_eq (system (command), 0);
}
