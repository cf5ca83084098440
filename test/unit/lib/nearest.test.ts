import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nearest } from '../../../src/lib/nearest.js';

const KEYS = ['metricsListen', 'listen', 'upstream', 'modelsRefresh', 'collectorGpu', 'slos', 'buckets'];

test('separators and case are ignored: kebab, snake and dotted spellings find the key', () => {
  assert.equal(nearest('metrics-listen', KEYS), 'metricsListen');
  assert.equal(nearest('METRICS_LISTEN', KEYS), 'metricsListen');
  assert.equal(nearest('collector.gpu', KEYS), 'collectorGpu');
});

test('typos within a third of the name find it; far names find nothing', () => {
  assert.equal(nearest('upstrem', KEYS), 'upstream');
  assert.equal(nearest('models_refersh', KEYS), 'modelsRefresh');
  assert.equal(nearest('slo', KEYS), 'slos');
  assert.equal(nearest('groups', KEYS), null);
  assert.equal(nearest('listen_port', KEYS), null);
});
