/**
 * The environment record of a device run, as `infermeter bench` writes its own (date,
 * command, infermeter version, host, GPU: model, driver, CUDA, cores, memory), plus the CPUs
 * this process may run on, which the run's pinning divides between client, upstream and
 * proxy. Usage: node dist/scripts/device/environment.js <nvidia-smi> > environment.json
 */
import { gpuEnvironment, hostEnvironment, infermeterVersion } from '../../src/bench/environment.js';
import { availableParallelism } from 'node:os';

const nvidiaSmi = process.argv[2];
if (!nvidiaSmi) {
  process.stderr.write('usage: environment.js <nvidia-smi binary>\n');
  process.exit(2);
}

const record = {
  date: new Date().toISOString(),
  command: process.argv.slice(1),
  infermeterVersion: infermeterVersion(),
  host: { ...hostEnvironment(), availableParallelism: availableParallelism() },
  gpu: await gpuEnvironment(nvidiaSmi, { ...process.env, NVSMI_SHOW_ALL_DEVICES: '1' }),
};
process.stdout.write(JSON.stringify(record, null, 2) + '\n');
