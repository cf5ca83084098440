/**
 * deploy/kubernetes against the Kubernetes API schemas: every manifest the kustomization lists
 * (and the ConfigMap its generator makes) validates with the OpenAPI schema of its apiVersion
 * and kind, from kubernetes-models (core kinds) and @kubernetes-models/prometheus-operator
 * (ServiceMonitor, PrometheusRule). A kind without a schema here fails the test: nothing ships
 * unchecked. A broken copy of each manifest is refused, so the check is a real one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { readRepo, yamlDocuments, yamlFile } from '../../fakes/deploy-files.js';

const DIR = 'deploy/kubernetes/';
interface Validatable { validate(): void }
type Model = new (data: any) => Validatable;
const SCHEMAS: Record<string, Model> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

const kustomization = yamlFile<{ resources: string[]; configMapGenerator?: { name: string; files: string[] }[] }>(DIR + 'kustomization.yaml');
const manifests = [
  ...kustomization.resources.flatMap((f) => yamlDocuments(DIR + f).map((doc) => ({ file: f, doc }))),
  // What kustomize's configMapGenerator makes of the listed files.
  ...(kustomization.configMapGenerator ?? []).map((g) => ({
    file: `configMapGenerator ${g.name}`,
    doc: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: g.name }, data: Object.fromEntries(g.files.map((f) => [f, readRepo(DIR + f)])) } as Record<string, unknown>,
  })),
];

function schemaOf(doc: Record<string, unknown>): Model {
  const key = `${doc['apiVersion']}/${doc['kind']}`;
  const model = SCHEMAS[key];
  assert.ok(model, `no Kubernetes schema for ${key} here: add it to SCHEMAS`);
  return model;
}

test('every manifest validates against the Kubernetes API schema of its kind', () => {
  assert.ok(manifests.length >= 5, `expected the deployment, service, servicemonitor, prometheusrule and configmap, got ${manifests.length}`);
  const kinds = new Set(manifests.map((m) => m.doc['kind']));
  for (const k of ['Deployment', 'Service', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap']) assert.ok(kinds.has(k), `no ${k} in deploy/kubernetes`);
  for (const { file, doc } of manifests) {
    const Kind = schemaOf(doc);
    assert.doesNotThrow(() => new Kind(doc).validate(), (err: Error) => `${file} ${doc['kind']}: ${err.message}`);
  }
});

test('the schemas refuse a broken copy of each manifest', () => {
  const breakIt: Record<string, (d: any) => void> = {
    Deployment: (d) => { d.spec.template.spec.containers[0].ports = [{ containerPort: 'http' }]; },
    Service: (d) => { d.spec.ports = [{ port: 'metrics' }]; },
    ServiceMonitor: (d) => { d.spec.endpoints = [{ port: 9464 }]; },
    PrometheusRule: (d) => { d.spec.groups = [{ rules: [{ record: 'x' }] }]; },
    ConfigMap: (d) => { d.data = { 'infermeter.yaml': 1 }; },
  };
  for (const { file, doc } of manifests) {
    const copy = structuredClone(doc) as any;
    breakIt[doc['kind'] as string]!(copy);
    const Kind = schemaOf(doc);
    assert.throws(() => new Kind(copy).validate(), `${file} ${doc['kind']}: a broken copy passed the schema`);
  }
});
