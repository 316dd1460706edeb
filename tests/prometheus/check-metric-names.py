#!/usr/bin/env python3
"""Every metric the alert rules name is one sluice exports and documents.

Reads the rule files (default: deploy/prometheus/alerts.yml), takes every
metric name from each rule's expression and annotations (sluice_*, mock_*
and Prometheus' own `up`), and checks that docs/metrics.md lists it and
that a C source under common/, proto/ or services/ registers it (a string
literal with the name; a histogram's _bucket, _sum and _count come from its
base name). An alert on a name no process exports never fires: that is the
bug this finds. Exits 1 naming each unknown metric and the rule it is in.

It also checks deploy/prometheus/prometheus.yml against docker-compose.yml:
a job per service that runs a sluice program, each at the port that
service's command gives --metrics-port (the mock's, --port), so the
scrape config cannot drift from the stack it scrapes.

--self-test: the checker itself, on rules with a known and an unknown name.
"""
import os
import re
import sys
import tempfile

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
DOC = os.path.join(ROOT, 'docs', 'metrics.md')
SOURCES = ('common', 'proto', 'services')
NAME = re.compile(r'\b((?:sluice|mock)_[a-z0-9_]+)\b')
HISTO_SUFFIXES = ('_bucket', '_sum', '_count')
PROMETHEUS_OWN = {'up'}

# Metrics a rule may name before any process exports them: none. (A
# name added here must say why.)
PENDING = set()


def documented(doc_path):
    with open(doc_path, encoding='utf-8') as f:
        return set(NAME.findall(f.read()))


def exported(root):
    """Names in string literals, and those a family of metrics composes
    from a literal prefix and a "%s_<suffix>" format (sl_llm_client.c's
    sluice_llm_judge_seconds, sluice_decide_seconds)."""
    names, suffixes = set(), set()
    literal = re.compile(r'"((?:sluice|mock)_[a-z0-9_]+)"')
    composed = re.compile(r'"%s_([a-z0-9_]+)"')
    for top in SOURCES:
        for d, _, files in os.walk(os.path.join(root, top)):
            for fn in files:
                if fn.endswith(('.c', '.h')):
                    with open(os.path.join(d, fn), encoding='utf-8', errors='replace') as f:
                        text = f.read()
                    names.update(literal.findall(text))
                    suffixes.update(composed.findall(text))
    return names | {n + '_' + s for n in names for s in suffixes}


def base(name):
    for s in HISTO_SUFFIXES:
        if name.endswith(s):
            return name[:-len(s)]
    return name


def rule_names(path):
    """(alert, metric) for every metric name a rule's text mentions."""
    with open(path, encoding='utf-8') as f:
        doc = yaml.safe_load(f)
    out = []
    for group in doc.get('groups', []):
        for rule in group.get('rules', []):
            who = rule.get('alert') or rule.get('record')
            texts = [rule.get('expr', '')] + list((rule.get('annotations') or {}).values())
            for text in texts:
                for m in NAME.findall(str(text)):
                    out.append((who, m))
            if re.search(r'\bup\b', str(rule.get('expr', ''))):
                out.append((who, 'up'))
    return out


def check(paths, docs, code, pending):
    bad = []
    count = 0
    for path in paths:
        for who, name in rule_names(path):
            count += 1
            if name in PROMETHEUS_OWN or name in pending:
                continue
            missing = [what for what, known in (('docs/metrics.md', docs), ('the sources', code))
                       if name not in known and base(name) not in known]
            if missing:
                bad.append('%s: %s names %s, which %s does not know' %
                           (os.path.relpath(path, ROOT), who, name, ' nor '.join(missing)))
    return count, bad


def self_test():
    text = ('groups:\n  - name: t\n    rules:\n'
            '      - alert: Known\n        expr: sluice_hop_stalled == 1 and up == 1\n'
            '        annotations: { summary: "see sluice_hop_credit" }\n'
            '      - alert: Unknown\n        expr: sluice_no_such_metric_total > 0\n')
    with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as f:
        f.write(text)
    try:
        docs = {'sluice_hop_stalled', 'sluice_hop_credit', 'sluice_no_such_metric_total'}
        code = {'sluice_hop_stalled', 'sluice_hop_credit'}
        count, bad = check([f.name], docs, code, set())
        assert count == 4, count
        assert len(bad) == 1 and 'Unknown names sluice_no_such_metric_total' in bad[0], bad
        assert 'the sources' in bad[0] and 'docs/metrics.md' not in bad[0], bad
        # a histogram's series by its base name; a pending name passes
        count, bad = check([f.name], docs | {'sluice_x'}, code | {'sluice_x'}, {'sluice_no_such_metric_total'})
        assert not bad, bad
        bad = check_jobs({'judge': 9553, 'gateway': 1}, {'judge': 9553, 'gateway': 9555, 'audit': 9558})
        assert len(bad) == 2 and 'gateway' in bad[0] + bad[1] and 'audit' in bad[0] + bad[1], bad
    finally:
        os.unlink(f.name)
    assert base('sluice_x_seconds_bucket') == 'sluice_x_seconds'
    print('check-metric-names self-test: ok')


def compose_ports(path):
    """{service: metrics port} of the compose services that run sluice
    (but the one-shot set-up, and a process without metrics, the tap)."""
    with open(path, encoding='utf-8') as f:
        services = yaml.safe_load(f)['services']
    out = {}
    for name, svc in services.items():
        cmd = [str(a) for a in (svc.get('command') or [])]
        if not cmd or not cmd[0].startswith('sluice-') or cmd[0] in ('sluice-keygen', 'sluice-compose-init'):
            continue
        flag = '--port' if cmd[0] == 'sluice-mock' else '--metrics-port'
        if flag in cmd and cmd[cmd.index(flag) + 1] == 'off':
            continue
        out[name] = int(cmd[cmd.index(flag) + 1]) if flag in cmd else None
    return out


def scrape_ports(path):
    """{job: port} of the scrape config's jobs."""
    with open(path, encoding='utf-8') as f:
        config = yaml.safe_load(f)
    out = {}
    for job in config['scrape_configs']:
        ports = [sd.get('port') for sd in job.get('dns_sd_configs', [])]
        out[job['job_name']] = ports[0] if len(ports) == 1 else None
    return out


def check_jobs(scrape, compose):
    bad = []
    for name in sorted(set(scrape) | set(compose)):
        if name not in scrape:
            bad.append('prometheus.yml: no job for the compose service %s' % name)
        elif name not in compose:
            bad.append('prometheus.yml: job %s is no sluice service of docker-compose.yml' % name)
        elif scrape[name] != compose[name]:
            bad.append('prometheus.yml: job %s scrapes port %s, docker-compose.yml gives %s' %
                       (name, scrape[name], compose[name]))
    return bad


def main(argv):
    if argv[1:] == ['--self-test']:
        self_test()
        return 0
    paths = argv[1:] or [os.path.join(ROOT, 'deploy', 'prometheus', 'alerts.yml')]
    docs, code = documented(DOC), exported(ROOT)
    count, bad = check(paths, docs, code, PENDING)
    scrape = scrape_ports(os.path.join(ROOT, 'deploy', 'prometheus', 'prometheus.yml'))
    bad += check_jobs(scrape, compose_ports(os.path.join(ROOT, 'docker-compose.yml')))
    for line in bad:
        print(line)
    arrived = sorted(n for n in PENDING if n in docs and n in code)
    if arrived:
        print('now exported and documented, drop from PENDING: ' + ', '.join(arrived))
    if bad:
        return 1
    pending = ' (pending: %s)' % ', '.join(sorted(PENDING)) if PENDING else ''
    print('alert rules: %d metric references, each exported and documented%s; '
          'scrape jobs: %d, one per sluice service of docker-compose.yml at its metrics port' %
          (count, pending, len(scrape)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
