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
- compose.yaml: PostgreSQL, three tollbooth replicas with CPU limits and a health check,
  HAProxy with the config file from deploy/haproxy, the migration step first.
- Dockerfile: several stages, production dependencies only in the last, a numeric non-root
  USER, exec-form CMD (node is PID 1 and gets SIGTERM), a HEALTHCHECK without curl, and every
  COPY source present in the repository and not excluded by .dockerignore.
- HAProxy takes a draining replica out (inter x fall) before its drain ends.
Prints one line per check and exits 1 when any fails. Needs PyYAML.
"""
import json
import os
import re
import sys

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

# --- Dockerfile ---------------------------------------------------------------------------
dockerfile = open(os.path.join(root, 'Dockerfile')).read()
lines = [line.strip() for line in re.sub(r'\\\n', ' ', dockerfile).splitlines() if line.strip() and not line.strip().startswith('#')]
stages = [line for line in lines if line.upper().startswith('FROM ')]
check(len(stages) >= 2, f'Dockerfile has several stages ({len(stages)})')
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
            check(os.path.exists(os.path.join(root, source)) and not excluded, f'COPY source {source} exists and is in the build context')

# --- compose.yaml ---------------------------------------------------------------------------
compose = load('compose.yaml')
services = compose['services']
check({'postgres', 'tollbooth', 'haproxy', 'migrate'} <= set(services), 'compose has postgres, migrate, tollbooth and haproxy')
replica = services['tollbooth']
check(replica['deploy']['replicas'] == 3 and 'cpus' in replica['deploy']['resources']['limits'], 'three tollbooth replicas with a CPU limit')
check('healthcheck' in replica and '/healthz' in ' '.join(replica['healthcheck']['test']), 'the replicas have a /healthz health check')
check('healthcheck' in services['postgres'], 'PostgreSQL has a health check')
check(replica['depends_on']['migrate']['condition'] == 'service_completed_successfully' and services['migrate']['depends_on']['postgres']['condition'] == 'service_healthy', 'postgres healthy, then migrate, then the replicas')
mounts = [v.split(':') for v in services['haproxy']['volumes']]
check(any(os.path.isfile(os.path.join(root, m[0])) and m[1].endswith('haproxy.cfg') for m in mounts), 'HAProxy mounts deploy/haproxy/haproxy.cfg')
compose_drain_s = int(replica['environment']['TOLLBOOTH_SHUTDOWN_DRAIN_MS']) / 1000
grace_s = ms(replica['stop_grace_period']) / 1000
check(grace_s >= compose_drain_s + 15, f'stop_grace_period {grace_s:g} s >= drain {compose_drain_s:g} s + 15 s')
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

print(f'{len(failures)} failed' if failures else 'deploy checks passed')
sys.exit(1 if failures else 0)
