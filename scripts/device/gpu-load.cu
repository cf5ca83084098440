// Loads every GPU for a while: an FMA loop over many blocks (SM activity, occupancy) and
// device-to-device copies (DRAM). Built with nvcc by scripts/device/run.sh only when nothing
// else on the machine can load a GPU. Usage: gpu-load SECONDS
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

__global__ void spin(float *x, int iterations) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = x[i];
  for (int k = 0; k < iterations; k++) a = a * 1.000001f + 0.000001f;
  x[i] = a;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 30;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 3;
  const size_t threads = 1 << 24, bytes = 256u << 20;
  float **x = new float *[devices];
  char **a = new char *[devices], **b = new char *[devices];
  for (int d = 0; d < devices; d++) {
    cudaSetDevice(d);
    cudaMalloc(&x[d], threads * sizeof(float));
    cudaMemset(x[d], 0, threads * sizeof(float));
    cudaMalloc(&a[d], bytes);
    cudaMalloc(&b[d], bytes);
  }
  time_t end = time(nullptr) + (time_t)seconds;
  while (time(nullptr) < end) {
    for (int d = 0; d < devices; d++) {
      cudaSetDevice(d);
      spin<<<threads / 256, 256>>>(x[d], 2000);
      cudaMemcpyAsync(b[d], a[d], bytes, cudaMemcpyDeviceToDevice);
    }
    for (int d = 0; d < devices; d++) {
      cudaSetDevice(d);
      cudaDeviceSynchronize();
    }
  }
  printf("gpu-load: %d GPUs loaded for %.0fs\n", devices, seconds);
  return 0;
}
