/**
 * deploy/kubernetes/autoscaling: the KEDA ScaledObject, the HPA and prometheus-adapter's rule
 * on infermeter_load_ratio (docs/headroom.md, docs/deploy.md) against their schemas:
 * - the ScaledObject against KEDA's own CRD (test/fixtures/keda-v2.20.2-scaledobjects-crd.yaml),
 *   an unknown field refused as `kubectl apply --validate=strict` refuses it, and its
 *   Prometheus trigger's metadata keys against the scaler's (KEDA pkg/scalers/prometheus_scaler.go);
 * - the HPA and the adapter's ConfigMap against the Kubernetes API schemas (kubernetes-models);
 * - the adapter's rules file against its config types (test/fixtures/prometheus-adapter-config.schema.json,
 *   unknown keys refused as its yaml.UnmarshalStrict does).
 * A broken copy of each is refused. Then the three agree with each other and with the rest
 * of deploy/kubernetes: the metric is in the catalog, the target is the vLLM Deployment, the
 * selector's label is one the ServiceMonitor's scrape gives, the thresholds sit under the alert's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { readRepo, yamlDocuments, yamlFile } from '../../fakes/deploy-files.js';
import { catalog } from '../../../src/metrics/catalog.js';
import { DEFAULT_RULES_OPTIONS } from '../../../src/ops/rules-types.js';

const DIR = 'deploy/kubernetes/autoscaling/';
const scaledObject = yamlDocuments(DIR + 'keda-scaledobject.yaml')[0]! as any;
const hpa = yamlDocuments(DIR + 'hpa.yaml')[0]! as any;
const adapterMap = yamlDocuments(DIR + 'prometheus-adapter.yaml')[0]! as any;
const adapterConfig = () => parse(adapterMap.data['config.yaml']) as any;

/** The Prometheus scaler's metadata keys (KEDA v2.20.2, prometheusMetadata's `keda:"name=..."` tags). */
const PROMETHEUS_TRIGGER_KEYS = ['serverAddress', 'query', 'queryParameters', 'threshold', 'activationThreshold', 'namespace', 'customHeaders', 'ignoreNullValues', 'unsafeSsl', 'awsRegion', 'timeout', 'identityOwner'];

/** Every object schema with properties and no stated policy refuses unknown fields (kubectl --validate=strict). */
function strict(schema: any): any {
  if (schema && typeof schema === 'object') {
    if (Array.isArray(schema)) return schema.map(strict);
    const out: any = {};
    for (const [k, v] of Object.entries(schema)) out[k] = strict(v);
    if (out.properties && out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false;
    return out;
  }
  return schema;
}

function kedaValidator(): ValidateFunction {
  const crd = yamlFile<any>('test/fixtures/keda-v2.20.2-scaledobjects-crd.yaml');
  assert.equal(crd.spec.names.kind, 'ScaledObject');
  const version = crd.spec.versions.find((v: any) => `${crd.spec.group}/${v.name}` === scaledObject.apiVersion);
  assert.ok(version, `the CRD serves ${scaledObject.apiVersion}`);
  const schema = strict(version.schema.openAPIV3Schema);
  // metadata is the API server's ObjectMeta, not the CRD's to describe.
  schema.properties.metadata = { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 }, labels: { type: 'object', additionalProperties: { type: 'string' } } } };
  return new Ajv({ strict: false, allErrors: true }).compile(schema);
}

function adapterValidator(): ValidateFunction {
  return new Ajv({ strict: false, allErrors: true }).compile(JSON.parse(readRepo('test/fixtures/prometheus-adapter-config.schema.json')));
}

const kedaTrigger = (so: any) => so.spec.triggers.find((t: any) => t.type === 'prometheus');

test('the KEDA ScaledObject validates against KEDA\'s CRD, and its trigger speaks the Prometheus scaler\'s keys', () => {
  const validate = kedaValidator();
  const valid: boolean = validate(structuredClone(scaledObject));
  assert.ok(valid, JSON.stringify(validate.errors));
  assert.equal(scaledObject.kind, 'ScaledObject');
  const t = kedaTrigger(scaledObject);
  assert.ok(t, 'a prometheus trigger');
  for (const k of Object.keys(t.metadata)) assert.ok(PROMETHEUS_TRIGGER_KEYS.includes(k), `${k} is a Prometheus scaler key`);
  for (const k of ['serverAddress', 'query', 'threshold']) assert.ok(t.metadata[k], `${k} is set`);
  assert.equal(t.metadata.ignoreNullValues, 'false', 'an unknown capacity (no series) must hold the replicas, not read as zero load');
  assert.ok(['Value', 'AverageValue'].includes(t.metricType));
});

test('KEDA\'s CRD refuses a broken copy of the ScaledObject', () => {
  const validate = kedaValidator();
  const broken: ((so: any) => void)[] = [
    (so) => { kedaTrigger(so).metadata.threshold = 0.7; }, // metadata values are strings
    (so) => { delete so.spec.scaleTargetRef; },
    (so) => { so.spec.minReplicaCounts = 1; }, // a typo: unknown under --validate=strict
    (so) => { so.spec.triggers = [{ metadata: kedaTrigger(so).metadata }]; }, // no type
  ];
  for (const [i, b] of broken.entries()) {
    const copy = structuredClone(scaledObject);
    b(copy);
    assert.equal(validate(copy), false, `broken copy ${i} passed KEDA's schema`);
  }
});

test('the HPA and the adapter\'s ConfigMap validate against the Kubernetes API schemas; the rules file against the adapter\'s config', () => {
  assert.doesNotThrow(() => new HorizontalPodAutoscaler(hpa).validate());
  assert.doesNotThrow(() => new ConfigMap(adapterMap).validate());
  const validate = adapterValidator();
  assert.ok(validate(adapterConfig()), JSON.stringify(validate.errors));
});

test('the schemas refuse a broken copy of the HPA and of the adapter\'s rule', () => {
  const hpaBroken: ((h: any) => void)[] = [
    (h) => { h.spec.metrics[0].external.target = { type: 'Value', value: 'seventy' }; },
    (h) => { h.spec.maxReplicas = '8'; },
    (h) => { delete h.spec.metrics[0].external.metric.name; },
  ];
  for (const [i, b] of hpaBroken.entries()) {
    const copy = structuredClone(hpa);
    b(copy);
    assert.throws(() => new HorizontalPodAutoscaler(copy).validate(), `broken HPA copy ${i} passed`);
  }
  const validate = adapterValidator();
  const adapterBroken: ((c: any) => void)[] = [
    (c) => { c.externalRules[0].name.alias = c.externalRules[0].name.as; }, // not a key of NameMapping
    (c) => { c.externalRules[0].seriesQuery = 42; },
    (c) => { c.externalRules[0].resources.overrides.namespace = { group: '' }; }, // no resource
  ];
  for (const [i, b] of adapterBroken.entries()) {
    const copy = adapterConfig();
    b(copy);
    assert.equal(validate(copy), false, `broken adapter config ${i} passed`);
  }
  const map = structuredClone(adapterMap);
  map.data = { 'config.yaml': { externalRules: [] } };
  assert.throws(() => new ConfigMap(map).validate(), 'a ConfigMap value must be a string');
});

test('KEDA, the HPA and the adapter agree with each other, the catalog and deploy/kubernetes', () => {
  const metric = 'infermeter_load_ratio';
  assert.ok(catalog().some((m) => m.name === metric), `${metric} is in the catalog`);
  const deployment = yamlDocuments('deploy/kubernetes/deployment.yaml').find((d: any) => d.kind === 'Deployment') as any;
  for (const target of [scaledObject.spec.scaleTargetRef, hpa.spec.scaleTargetRef]) {
    assert.deepEqual({ kind: target.kind, name: target.name }, { kind: 'Deployment', name: deployment.metadata.name });
  }
  const rule = adapterConfig().externalRules[0];
  const ext = hpa.spec.metrics[0].external;
  assert.equal(ext.metric.name, rule.name.as, 'the HPA asks for the name the adapter serves');
  assert.match(rule.seriesQuery, new RegExp(`^'?${metric}\\{`));
  assert.match(kedaTrigger(scaledObject).metadata.query, new RegExp(`${metric}\\{`));
  // The selector's labels are ones the ServiceMonitor's scrape adds to every series.
  const service = yamlDocuments('deploy/kubernetes/service.yaml').find((d: any) => d.metadata.labels?.['app.kubernetes.io/component'] === 'metrics') as any;
  assert.deepEqual(ext.metric.selector.matchLabels, { service: service.metadata.name });
  assert.match(kedaTrigger(scaledObject).metadata.query, new RegExp(`service="${service.metadata.name}"`));
  assert.match(kedaTrigger(scaledObject).metadata.query, new RegExp(`gen_ai_request_model="${deployment.spec.template.spec.containers.find((c: any) => c.name === 'vllm').env.find((e: any) => e.name === 'MODEL').value}"`));
  // Both keep the replicas under the load where InfermeterLoadNearCapacity fires.
  const kedaTarget = Number(kedaTrigger(scaledObject).metadata.threshold);
  const hpaTarget = Number(String(ext.target.value).replace(/m$/, '')) / (String(ext.target.value).endsWith('m') ? 1000 : 1);
  for (const t of [kedaTarget, hpaTarget]) assert.ok(t > 0 && t < DEFAULT_RULES_OPTIONS.loadRatioAlert, `target ${t} under the alert's ${DEFAULT_RULES_OPTIONS.loadRatioAlert}`);
  assert.equal(ext.target.type, 'Value');
});
