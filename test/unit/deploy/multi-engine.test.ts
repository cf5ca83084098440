/**
 * deploy/multi-engine: every example's infermeter config (the file, the Kubernetes ConfigMap,
 * the compose config) passes the real config schema with several upstreams; the DaemonSet has
 * what auto attribution needs (host network, host PID); the systemd unit starts from the file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigFile } from '../../../src/config.js';
import { readRepo, repoPath, yamlDocuments, yamlFile } from '../../fakes/deploy-files.js';

const DIR = 'deploy/multi-engine/';

function configFromText(text: string) {
  const file = join(mkdtempSync(join(tmpdir(), 'infermeter-multi-')), 'infermeter.yaml');
  writeFileSync(file, text);
  return loadConfigFile(file);
}

test('multi-engine config file: several upstreams, names, engines and gpus as written', () => {
  const cfg = loadConfigFile(repoPath(`${DIR}infermeter.yaml`));
  assert.deepEqual(cfg.upstreams.map((u) => [u.name, u.engine, u.gpus.join(',')]), [
    ['llama-70b', 'vllm', '0,1,2,3'], ['qwen-7b-a', 'vllm', ''], ['qwen-7b-b', 'vllm', ''], ['coder', 'sglang', ''],
  ]);
  assert.equal(cfg.upstreams[3]!.headersTimeout, 120);
});

test('multi-engine DaemonSet: host network and host PID, config from its ConfigMap, which the schema accepts', () => {
  const docs = yamlDocuments(`${DIR}kubernetes-daemonset.yaml`) as { kind: string; data?: Record<string, string>; spec?: any }[];
  const cm = docs.find((d) => d.kind === 'ConfigMap')!;
  const ds = docs.find((d) => d.kind === 'DaemonSet')!;
  const pod = ds.spec.template.spec;
  assert.equal(pod.hostNetwork, true);
  assert.equal(pod.hostPID, true);
  assert.deepEqual(pod.containers[0].args, ['--config', '/etc/infermeter/infermeter.yaml']);
  assert.equal(ds.spec.selector.matchLabels['app.kubernetes.io/name'], ds.spec.template.metadata.labels['app.kubernetes.io/name']);
  assert.ok(configFromText(cm.data!['infermeter.yaml']!).upstreams.length >= 2);
});

test('multi-engine compose: infermeter on the host network and PID namespace, its inline config valid', () => {
  const doc = yamlFile<{ services: Record<string, any>; configs: Record<string, { content: string }> }>(`${DIR}docker-compose.yml`);
  const im = doc.services['infermeter'];
  assert.equal(im.network_mode, 'host');
  assert.equal(im.pid, 'host');
  const cfg = configFromText(doc.configs['infermeter']!.content);
  const ports = Object.values(doc.services).filter((s) => s !== im).map((s) => s.command[s.command.indexOf('--port') + 1]);
  assert.deepEqual(cfg.upstreams.map((u) => new URL(u.url).port), ports, 'each upstream is one engine of the stack');
});

test('multi-engine systemd unit starts infermeter from the config file', () => {
  const unit = readRepo(`${DIR}infermeter-node.service`);
  assert.match(unit, /^ExecStart=\/usr\/local\/bin\/infermeter --config \/etc\/infermeter\/infermeter\.yaml$/m);
  assert.match(unit, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
});
