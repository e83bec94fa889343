#!/usr/bin/env python3
"""What scripts/validate-deploy.sh checks without a container engine or kustomize.

- deploy/k8s/kustomization.yaml lists exactly the manifests beside it (each one is validated
  against the Kubernetes schemas by kubernetes-validate separately), and uses no generator or
  patch that would need kustomize itself to understand.
- The manifests agree with each other and with the service: selectors match the pod labels,
  the probes ask /healthz and /readyz on the container's port, CPU requests and limits are set,
  the HPA and the PDB point at the Deployment, the ConfigMap and the Secret referenced exist,
  and terminationGracePeriodSeconds covers preStop + drain + the 15 s the service gives the
  requests in flight.
- Least privilege on Kubernetes: the migrations run as the migration role, from a Secret only
  the init container reads, and grant the role the service's DATABASE_URL connects as; no
  service-account token; the admin listener on the pod's address (downward API); the proxies
  trusted named by CIDR; TOLLBOOTH_PUBLIC_URL https; a NetworkPolicy that lets in the API port
  and the admin port from one namespace each, and lets out PostgreSQL, SMTP and DNS only.
- compose.yaml: PostgreSQL, three tollbooth replicas with CPU limits and a health check,
  HAProxy with the config file from deploy/haproxy, the migration step first; the roles made by
  deploy/postgres's init script, migrations as one role, the replicas as the other, and no
  secret with a default value.
- Dockerfile: every FROM pinned by digest (through the ARG defaults), several stages, production
  dependencies only in the last, a numeric non-root USER, exec-form CMD (node is PID 1 and gets
  SIGTERM), a HEALTHCHECK without curl, and every COPY source present in the repository and not
  excluded by .dockerignore.
- HAProxy takes a draining replica out (inter x fall) before its drain ends.
Prints one line per check and exits 1 when any fails. Needs PyYAML.
"""
import glob
import ipaddress
import json
import os
import re
import sys
from urllib.parse import urlsplit

import yaml

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what)
    if not ok:
        failures.append(what)


def load(path):
    with open(os.path.join(root, path)) as f:
        return yaml.safe_load(f)


def ms(text):
    """HAProxy and compose durations (2s, 500ms, 1m30s) in milliseconds; a bare number is ms, as in HAProxy."""
    units = {'ms': 1, 's': 1000, 'm': 60000, 'h': 3600000, '': 1}
    return sum(int(value) * units[unit] for value, unit in re.findall(r'(\d+)(ms|s|m|h|)', str(text)))


# --- Kubernetes -------------------------------------------------------------------------
k8s = 'deploy/k8s'
kustomization = load(f'{k8s}/kustomization.yaml')
listed = kustomization.get('resources', [])
present = sorted(f for f in os.listdir(os.path.join(root, k8s)) if f.endswith('.yaml') and f != 'kustomization.yaml')
check(sorted(listed) == present, f'kustomization.yaml lists exactly the manifests in {k8s}: {present}')
check(set(kustomization) <= {'apiVersion', 'kind', 'resources', 'images'}, 'kustomization.yaml uses resources and images only (checkable without kustomize)')
docs = {}
for name in present:
    for doc in yaml.safe_load_all(open(os.path.join(root, k8s, name))):
        docs[(doc['kind'], doc['metadata']['name'])] = doc

deployment = docs.get(('Deployment', 'tollbooth'))
check(deployment is not None, 'a Deployment named tollbooth')
pod = deployment['spec']['template']
labels = pod['metadata']['labels']
check(deployment['spec']['selector']['matchLabels'].items() <= labels.items(), 'the Deployment selector matches its pod labels')
container = next(c for c in pod['spec']['containers'] if c['name'] == 'tollbooth')
port = container['ports'][0]
for probe, path in (('startupProbe', '/healthz'), ('livenessProbe', '/healthz'), ('readinessProbe', '/readyz')):
    get = container.get(probe, {}).get('httpGet', {})
    check(get.get('path') == path and get.get('port') in (port['name'], port['containerPort']), f'{probe} asks {path} on the container port')
resources = container.get('resources', {})
check('cpu' in resources.get('requests', {}) and 'cpu' in resources.get('limits', {}), 'CPU requests and limits are set')
configmap = docs.get(('ConfigMap', 'tollbooth'))
check(configmap is not None and ('Secret', 'tollbooth') in docs, 'the ConfigMap and the Secret exist')
refs = [(('ConfigMap' if 'configMapRef' in e else 'Secret'), (e.get('configMapRef') or e.get('secretRef'))['name']) for c in pod['spec']['containers'] + pod['spec'].get('initContainers', []) for e in c.get('envFrom', [])]
check(all(ref in docs for ref in refs), f'every envFrom reference exists: {refs}')
check(configmap['data'].get('PORT') == str(port['containerPort']) and configmap['data'].get('HOST') == '0.0.0.0', 'the service listens on the container port, on every interface')
check(any('migrate' in ' '.join(c.get('command', [])) for c in pod['spec'].get('initContainers', [])), 'an init container runs the migrations')
pre_stop = container['lifecycle']['preStop']
pre_stop_s = int(pre_stop['sleep']['seconds']) if 'sleep' in pre_stop else int(pre_stop['exec']['command'][-1])
drain_s = int(configmap['data']['TOLLBOOTH_SHUTDOWN_DRAIN_MS']) / 1000
grace = pod['spec']['terminationGracePeriodSeconds']
check(grace >= pre_stop_s + drain_s + 15, f'terminationGracePeriodSeconds {grace} >= preStop {pre_stop_s} s + drain {drain_s:g} s + 15 s for requests in flight')
hpa = docs.get(('HorizontalPodAutoscaler', 'tollbooth'))
check(hpa is not None and hpa['spec']['scaleTargetRef'] == {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'tollbooth'}, 'the HPA scales the Deployment')
check(any(m['type'] == 'Resource' and m['resource']['name'] == 'cpu' for m in hpa['spec']['metrics']), 'the HPA scales on CPU')
pdb = docs.get(('PodDisruptionBudget', 'tollbooth'))
check(pdb is not None and pdb['spec']['selector']['matchLabels'].items() <= labels.items(), 'the PDB selects the pods')
service = docs.get(('Service', 'tollbooth'))
check(service is not None and service['spec']['selector'].items() <= labels.items() and service['spec']['ports'][0]['targetPort'] in (port['name'], port['containerPort']), 'the Service selects the pods on their port')
check(pod['spec'].get('securityContext', {}).get('runAsNonRoot') is True, 'pods run as non-root')
check(pod['spec'].get('automountServiceAccountToken') is False, 'no service-account token in the pods (automountServiceAccountToken: false)')


def env_of(c):
    return {e['name']: e for e in c.get('env', [])}


def secret_refs(c):
    return [e['secretRef']['name'] for e in c.get('envFrom', []) if 'secretRef' in e]


def url_user(secret_name):
    """The user of DATABASE_URL in a Secret of the manifests."""
    secret = docs.get(('Secret', secret_name), {})
    url = {**secret.get('data', {}), **secret.get('stringData', {})}.get('DATABASE_URL')
    return urlsplit(url).username if url else None


# The API on every interface (the kubelet's probes and the ingress controller), /metrics on the
# pod's own address only.
check('TOLLBOOTH_ADMIN_HOST' not in configmap['data'], 'the ConfigMap does not set TOLLBOOTH_ADMIN_HOST (the pod sets it from its own address)')
admin_host = env_of(container).get('TOLLBOOTH_ADMIN_HOST', {})
check(admin_host.get('valueFrom', {}).get('fieldRef', {}).get('fieldPath') == 'status.podIP', 'TOLLBOOTH_ADMIN_HOST comes from the downward API (status.podIP), not 0.0.0.0')
check(configmap['data'].get('TOLLBOOTH_ADMIN_PORT') == str(next((p['containerPort'] for p in container['ports'] if p.get('name') == 'admin'), None)), 'TOLLBOOTH_ADMIN_PORT is the container port named admin')


def is_network(text):
    try:
        ipaddress.ip_network(text.strip(), strict=False)
        return True
    except ValueError:
        return False


trust_proxy = configmap['data'].get('TOLLBOOTH_TRUST_PROXY', '')
check(trust_proxy != '' and all(is_network(part) for part in trust_proxy.split(',')), f'TOLLBOOTH_TRUST_PROXY names addresses or CIDRs only, not a keyword or a hop count ({trust_proxy!r})')
public_url = configmap['data'].get('TOLLBOOTH_PUBLIC_URL', '')
check(public_url.startswith('https://') and urlsplit(public_url).hostname is not None, f'TOLLBOOTH_PUBLIC_URL is an https:// URL ({public_url!r})')

# Two roles: the migrations as the schema's owner, from a Secret no other container reads; the
# service as the role they grant rows to.
migrators = [c for c in pod['spec'].get('initContainers', []) if 'migrate' in ' '.join(c.get('command', []))]
migrator = migrators[0] if migrators else {}
migrator_secrets = secret_refs(migrator)
service_secrets = [name for c in pod['spec']['containers'] for name in secret_refs(c)]
check(len(migrator_secrets) == 1 and migrator_secrets[0] not in service_secrets, f'the migrations read a Secret of their own ({migrator_secrets}), which the service containers do not ({service_secrets})')
migration_user = url_user(migrator_secrets[0]) if migrator_secrets else None
service_users = {url_user(name) for name in service_secrets} - {None}
runtime_role = env_of(migrator).get('TOLLBOOTH_RUNTIME_ROLE', {}).get('value')
check(migration_user is not None and len(service_users) == 1 and migration_user not in service_users, f'the migration role ({migration_user}) is not the role the service connects as ({sorted(service_users)})')
check(runtime_role is not None and {runtime_role} == service_users, f'the migrations grant TOLLBOOTH_RUNTIME_ROLE={runtime_role}, the role of the service\'s DATABASE_URL')
roles_sql = open(os.path.join(root, 'deploy/postgres/10-tollbooth-roles.sql')).read()
created_roles = set(re.findall(r'CREATE ROLE (\w+)', roles_sql))
check({migration_user, runtime_role} <= created_roles, f'deploy/postgres/10-tollbooth-roles.sql creates both roles ({sorted(created_roles)})')
check(not re.search(r'\b(SUPERUSER|CREATEDB|CREATEROLE|REPLICATION|BYPASSRLS)\b', re.sub(r'\bNO(SUPERUSER|CREATEDB|CREATEROLE|REPLICATION|BYPASSRLS)\b', '', re.sub(r'--[^\n]*', '', roles_sql))), 'the roles get no attribute beyond LOGIN')

# The NetworkPolicy: in, the API port from one namespace and the admin port from another; out,
# PostgreSQL, SMTP and DNS, nothing else.
policy = docs.get(('NetworkPolicy', 'tollbooth'))
check(policy is not None, 'a NetworkPolicy named tollbooth')
policy = policy or {'spec': {}}
check(policy['spec'].get('podSelector', {}).get('matchLabels', {}).items() <= labels.items() and policy['spec'].get('podSelector', {}).get('matchLabels'), 'the NetworkPolicy selects the pods')
check(sorted(policy['spec'].get('policyTypes', [])) == ['Egress', 'Ingress'], 'the NetworkPolicy restricts both ingress and egress')
container_ports = {p['name']: p['containerPort'] for p in container['ports']}


def rule_ports(rule):
    return {(p.get('protocol', 'TCP'), container_ports.get(p.get('port'), p.get('port'))) for p in rule.get('ports', [])}


ingress = policy['spec'].get('ingress', [])
check(all(rule.get('from') and rule.get('ports') for rule in ingress), 'every ingress rule names its sources and its ports (none allows all)')
for port_name in ('http', 'admin'):
    rules = [rule for rule in ingress if ('TCP', container_ports[port_name]) in rule_ports(rule)]
    sources = [peer for rule in rules for peer in rule.get('from', [])]
    check(len(rules) == 1 and len(sources) == 1 and set(sources[0]) == {'namespaceSelector'} and sources[0]['namespaceSelector'].get('matchLabels'),
          f'the {port_name} port ({container_ports[port_name]}) is reachable from one namespace only')
api_sources = [rule['from'] for rule in ingress if ('TCP', container_ports['http']) in rule_ports(rule)]
admin_sources = [rule['from'] for rule in ingress if ('TCP', container_ports['admin']) in rule_ports(rule)]
check(api_sources != admin_sources, 'the API and the admin port are reached from different namespaces')
check(set().union(*(rule_ports(rule) for rule in ingress)) == {('TCP', container_ports['http']), ('TCP', container_ports['admin'])}, 'no other port is let in')
egress = policy['spec'].get('egress', [])
egress_ports = set().union(*(rule_ports(rule) for rule in egress)) if egress else set()
check(all(rule.get('to') and rule.get('ports') for rule in egress), 'every egress rule names its destinations and its ports (none allows all)')
database_ports = {urlsplit({**docs[('Secret', name)].get('stringData', {})}.get('DATABASE_URL', '')).port or 5432 for name in service_secrets + migrator_secrets if ('Secret', name) in docs}
check({('TCP', port) for port in database_ports} | {('UDP', 53)} <= egress_ports, f'egress lets out PostgreSQL ({sorted(database_ports)}) and DNS')
check(egress_ports <= {('TCP', port) for port in database_ports} | {('UDP', 53), ('TCP', 53), ('TCP', 25), ('TCP', 465), ('TCP', 587)}, f'egress lets out PostgreSQL, SMTP and DNS only ({sorted(egress_ports)})')
check(all('ipBlock' not in peer or peer['ipBlock']['cidr'] not in ('0.0.0.0/0', '::/0') for rule in egress for peer in rule.get('to', [])), 'no egress rule to every address')

# --- Dockerfile ---------------------------------------------------------------------------
dockerfile = open(os.path.join(root, 'Dockerfile')).read()
lines = [line.strip() for line in re.sub(r'\\\n', ' ', dockerfile).splitlines() if line.strip() and not line.strip().startswith('#')]
stages = [line for line in lines if line.upper().startswith('FROM ')]
check(len(stages) >= 2, f'Dockerfile has several stages ({len(stages)})')
# Every base image pinned by digest: a tag alone can point at another image tomorrow. ARGs
# declared before the first FROM are resolved to their defaults (a --build-arg may override them).
global_args = {}
for line in lines:
    if line.upper().startswith('FROM '):
        break
    match = re.match(r'ARG\s+(\w+)=(\S+)$', line, re.IGNORECASE)
    if match:
        global_args[match.group(1)] = match.group(2).strip('"\'')
stage_names = set()
for line in stages:
    words = [word for word in line.split()[1:] if not word.startswith('--')]
    image = re.sub(r'\$\{?(\w+)\}?', lambda m: global_args.get(m.group(1), m.group(0)), words[0])
    if image.lower() not in stage_names:
        check(re.fullmatch(r'[\w.\-/:]+@sha256:[0-9a-f]{64}', image) is not None, f'{line} is pinned by digest ({image})')
    if len(words) >= 3 and words[1].upper() == 'AS':
        stage_names.add(words[2].lower())
node_images = {global_args.get('NODE_IMAGE', '')}
check(all(re.match(r'node:24[.\-]', image) for image in node_images), f'NODE_IMAGE is Node.js 24, the runtime CI tests on ({sorted(node_images)})')
last = lines[max(i for i, line in enumerate(lines) if line.upper().startswith('FROM ')):]
users = [line.split(None, 1)[1] for line in last if line.upper().startswith('USER ')]
check(len(users) > 0 and re.fullmatch(r'[1-9]\d*(:\d+)?', users[-1]) is not None, f'the final stage runs as a numeric non-root USER ({users[-1] if users else None})')
cmd = [line for line in last if line.upper().startswith('CMD ')]
check(len(cmd) == 1 and json.loads(cmd[0][4:])[0] == 'node', 'CMD is exec form with node as PID 1')
health = [line for line in last if line.upper().startswith('HEALTHCHECK ')]
check(len(health) == 1 and '/healthz' in health[0] and 'curl' not in health[0], 'HEALTHCHECK asks /healthz with node')
check(re.search(r'npm ci [^\n]*--omit=dev[^\n]*--workspace packages/service', dockerfile) is not None, 'production dependencies only, for the service package')
ignored = [line.strip() for line in open(os.path.join(root, '.dockerignore')) if line.strip() and not line.startswith('#')]
for line in lines:
    if line.upper().startswith('COPY ') and '--from=' not in line:
        sources = line.split()[1:-1]
        for source in sources:
            excluded = any(source == pattern or source.startswith(pattern.rstrip('/') + '/') or ('**/' in pattern and '/' + pattern.split('**/')[1] in '/' + source) for pattern in ignored)
            # A wildcard source (as Docker expands it) must match at least one file.
            present = len(glob.glob(os.path.join(root, source))) > 0 if any(c in source for c in '*?[') else os.path.exists(os.path.join(root, source))
            check(present and not excluded, f'COPY source {source} exists and is in the build context')

# --- compose.yaml ---------------------------------------------------------------------------
compose = load('compose.yaml')
services = compose['services']
check({'postgres', 'tollbooth', 'haproxy', 'migrate'} <= set(services), 'compose has postgres, migrate, tollbooth and haproxy')
replica = services['tollbooth']
limits = replica['deploy']['resources']['limits']
check(replica['deploy']['replicas'] == 3 and int(replica.get('cpu_quota', 0)) > 0 and int(replica.get('cpu_period', 0)) > 0, 'three tollbooth replicas with a CPU limit (cpu_quota over cpu_period)')
check(int(replica.get('cpu_period', 0)) == 10_000, "the replicas' quota counted over 10 ms CFS periods (docs/how-to/deploy.md, Behind HAProxy)")
check('cpus' not in limits and 'cpus' not in replica, 'no `cpus` beside `cpu_period`: Docker refuses the two together')
check('healthcheck' in replica and '/healthz' in ' '.join(replica['healthcheck']['test']), 'the replicas have a /healthz health check')
check('healthcheck' in services['postgres'], 'PostgreSQL has a health check')
check(replica['depends_on']['migrate']['condition'] == 'service_completed_successfully' and services['migrate']['depends_on']['postgres']['condition'] == 'service_healthy', 'postgres healthy, then migrate, then the replicas')
mounts = [v.split(':') for v in services['haproxy']['volumes']]
check(any(os.path.isfile(os.path.join(root, m[0])) and m[1].endswith('haproxy.cfg') for m in mounts), 'HAProxy mounts deploy/haproxy/haproxy.cfg')
compose_drain_s = int(replica['environment']['TOLLBOOTH_SHUTDOWN_DRAIN_MS']) / 1000
grace_s = ms(replica['stop_grace_period']) / 1000
check(grace_s >= compose_drain_s + 15, f'stop_grace_period {grace_s:g} s >= drain {compose_drain_s:g} s + 15 s')
# Least privilege: the superuser makes the roles and nothing else; the migrations run as one
# role, the replicas as the other; no secret falls back to a value written here.
postgres_env = services['postgres']['environment']
superuser = postgres_env.get('POSTGRES_USER', 'postgres')
init_mounts = [v.split(':') for v in services['postgres'].get('volumes', []) if '/docker-entrypoint-initdb.d/' in v]
check(len(init_mounts) == 1 and os.path.normpath(init_mounts[0][0]) == 'deploy/postgres/10-tollbooth-roles.sql', 'PostgreSQL runs deploy/postgres/10-tollbooth-roles.sql on its first start')


def compose_user(url):
    """The user of a DATABASE_URL in compose.yaml, its ${VAR:?...} interpolations left out."""
    return urlsplit(re.sub(r'\$\{[^}]*\}', 'interpolated', url)).username


compose_migration_user = compose_user(services['migrate']['environment']['DATABASE_URL'])
compose_service_user = compose_user(replica['environment']['DATABASE_URL'])
check(compose_migration_user in created_roles and compose_service_user in created_roles and compose_migration_user != compose_service_user,
      f'migrate connects as {compose_migration_user}, the replicas as {compose_service_user}: two roles of the init script')
check(superuser not in (compose_migration_user, compose_service_user), f'neither connects as the superuser ({superuser})')
check(services['migrate']['environment'].get('TOLLBOOTH_RUNTIME_ROLE') == compose_service_user, 'migrate grants the replicas\' role (TOLLBOOTH_RUNTIME_ROLE)')
check(services['migrate']['command'][-1] == 'migrate' and 'TOLLBOOTH_KEY_ENCRYPTION_KEY' not in services['migrate']['environment'], 'migrate runs `tollbooth migrate` with the database only')
compose_text = open(os.path.join(root, 'compose.yaml')).read()
references = re.findall(r'\$\{(\w+)(:?[-?+]?)', compose_text)
secret_like = [(name, op) for name, op in references if re.search(r'PASSWORD|SECRET|KEY', name)]
check(len(secret_like) > 0 and all(op == ':?' for _, op in secret_like), f'every secret in compose.yaml is required (${{VAR:?...}}), none has a default: {sorted(set(secret_like))}')
check(all(f'${{{name}:?' in compose_text for name in ('POSTGRES_PASSWORD', 'DB_MIGRATOR_PASSWORD', 'DB_SERVICE_PASSWORD')), 'the superuser\'s and both roles\' passwords are required')
check(replica['environment'].get('TOLLBOOTH_PUBLIC_URL', '').startswith('${TOLLBOOTH_PUBLIC_URL:?'), 'TOLLBOOTH_PUBLIC_URL is required')
check(os.path.isfile(os.path.join(root, services['migrate']['build'] if isinstance(services['migrate']['build'], str) else services['migrate']['build']['context'], 'Dockerfile')), 'the build context has the Dockerfile')

# --- HAProxy against the drain ---------------------------------------------------------------
haproxy = open(os.path.join(root, 'deploy/haproxy/haproxy.cfg')).read()
check('uri /readyz' in haproxy, 'HAProxy checks /readyz')
inter = re.search(r'default-server[^\n]*\binter (\S+)', haproxy)
fall = re.search(r'default-server[^\n]*\bfall (\d+)', haproxy)
if inter and fall:
    out_ms = ms(inter.group(1)) * int(fall.group(1))
    check(out_ms < compose_drain_s * 1000, f'HAProxy takes a draining replica out ({out_ms} ms = inter x fall) before its drain ends ({compose_drain_s * 1000:g} ms)')
else:
    check(False, 'HAProxy default-server sets inter and fall')

# --- HAProxy's limits on cheap requests (docs/how-to/deploy.md, "Behind HAProxy") -----------
server_defaults = re.findall(r'^\s*default-server ([^\n]*)', haproxy, re.M)
timing = {tuple(re.findall(r'\b(inter|fall|rise) (\S+)', line)) for line in server_defaults}
check(len(server_defaults) >= 2 and len(timing) == 1, 'HAProxy\'s capped and uncapped backends check their replicas alike (a replica leaves both at once)')
maxconn = re.search(r'default-server[^\n]*\bmaxconn (\d+)', haproxy)
max_in_flight = int(replica['environment'].get('TOLLBOOTH_MAX_IN_FLIGHT', 128))
check(maxconn is not None and 0 < int(maxconn.group(1)) <= max_in_flight, f'HAProxy caps cheap requests per replica (maxconn) at most at the replicas\' own cap ({max_in_flight}), so a replica never refuses what HAProxy sent')
overload = [line for line in haproxy.splitlines() if re.match(r'\s*(http-request return|http-error) status 503 ', line)]
check(len(overload) == 2 and all('SERVICE_OVERLOADED' in line and 'hdr Retry-After ' in line and 'application/json' in line for line in overload), 'HAProxy refuses at the door and after its queue with tollbooth\'s own 503 (JSON, Retry-After)')
check(re.search(r'^\s*acl api path_beg /api/$', haproxy, re.M) is not None and re.search(r'^\s*http-request return [^\n]* if capped ', haproxy, re.M) is not None, 'HAProxy caps API requests only: /healthz and /readyz pass uncapped')

print(f'{len(failures)} failed' if failures else 'deploy checks passed')
sys.exit(1 if failures else 0)
