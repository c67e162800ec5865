/* cuda_device.c: see cuda_device.h. The driver's types and functions are declared here by
 * hand (the few the host uses, with the ABI the driver has kept since CUDA 3.2), so the
 * host needs no CUDA headers to build. The "_v2" names are the ones cuda.h's macros map
 * the plain names to; the plain exports are the old 32-bit-pointer versions. */
#include "cuda_device.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* 0 is CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;

enum { CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76 };

struct cuda_device {
  void* lib;
  CUdevice device;
  CUcontext context;
  char name[160];
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
};

/* Writes "<what>: <driver's name for rc>" to err; returns -1 for the callers' convenience. */
static int driver_error(const cuda_device* dev, const char* what, CUresult rc, char* err, size_t errlen) {
  const char* text = NULL;
  if (dev->cuGetErrorString == NULL || dev->cuGetErrorString(rc, &text) != 0 || text == NULL) text = "unknown error";
  snprintf(err, errlen, "%s failed: CUDA error %d (%s)", what, rc, text);
  return -1;
}

/* dlsym into *slot; false (with err set) when the driver lacks the symbol. */
static int find_symbol(cuda_device* dev, const char* name, void* slot, char* err, size_t errlen) {
  void* sym = dlsym(dev->lib, name);
  if (sym == NULL) {
    snprintf(err, errlen, "libcuda.so.1 has no %s; the NVIDIA driver is too old", name);
    return 0;
  }
  *(void**)slot = sym; /* POSIX: function pointers round-trip through void* */
  return 1;
}

cuda_device* cuda_device_open(char* err, size_t errlen) {
  cuda_device* dev = calloc(1, sizeof *dev);
  if (dev == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  dev->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (dev->lib == NULL) {
    snprintf(err, errlen, "no CUDA driver (libcuda.so.1 not found)");
    free(dev);
    return NULL;
  }
  CUresult (*cuInit)(unsigned) = NULL;
  CUresult (*cuDeviceGetCount)(int*) = NULL;
  CUresult (*cuDeviceGet)(CUdevice*, int) = NULL;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = NULL;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = NULL;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = NULL;
  CUresult (*cuCtxSetCurrent)(CUcontext) = NULL;
  if (!find_symbol(dev, "cuGetErrorString", &dev->cuGetErrorString, err, errlen) ||
      !find_symbol(dev, "cuInit", &cuInit, err, errlen) ||
      !find_symbol(dev, "cuDeviceGetCount", &cuDeviceGetCount, err, errlen) ||
      !find_symbol(dev, "cuDeviceGet", &cuDeviceGet, err, errlen) ||
      !find_symbol(dev, "cuDeviceGetName", &cuDeviceGetName, err, errlen) ||
      !find_symbol(dev, "cuDeviceGetAttribute", &cuDeviceGetAttribute, err, errlen) ||
      !find_symbol(dev, "cuDevicePrimaryCtxRetain", &cuDevicePrimaryCtxRetain, err, errlen) ||
      !find_symbol(dev, "cuDevicePrimaryCtxRelease_v2", &dev->cuDevicePrimaryCtxRelease, err, errlen) ||
      !find_symbol(dev, "cuCtxSetCurrent", &cuCtxSetCurrent, err, errlen) ||
      !find_symbol(dev, "cuCtxSynchronize", &dev->cuCtxSynchronize, err, errlen) ||
      !find_symbol(dev, "cuMemAlloc_v2", &dev->cuMemAlloc, err, errlen) ||
      !find_symbol(dev, "cuMemFree_v2", &dev->cuMemFree, err, errlen) ||
      !find_symbol(dev, "cuMemcpyHtoD_v2", &dev->cuMemcpyHtoD, err, errlen) ||
      !find_symbol(dev, "cuMemcpyDtoH_v2", &dev->cuMemcpyDtoH, err, errlen)) {
    dlclose(dev->lib);
    free(dev);
    return NULL;
  }

  CUresult rc;
  int count = 0, major = 0, minor = 0;
  const char* step = "cuInit";
  if ((rc = cuInit(0)) != 0) goto fail;
  step = "cuDeviceGetCount";
  if ((rc = cuDeviceGetCount(&count)) != 0) goto fail;
  if (count == 0) {
    snprintf(err, errlen, "the CUDA driver sees no device");
    goto fail_quiet;
  }
  step = "cuDeviceGet";
  if ((rc = cuDeviceGet(&dev->device, 0)) != 0) goto fail;
  step = "cuDeviceGetName";
  if ((rc = cuDeviceGetName(dev->name, 128, dev->device)) != 0) goto fail;
  step = "cuDeviceGetAttribute";
  if ((rc = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device)) != 0 ||
      (rc = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->device)) != 0)
    goto fail;
  snprintf(dev->name + strnlen(dev->name, 128), sizeof dev->name - 128, " (sm%d%d)", major, minor);
  /* The primary context, not one of our own: the CUDA runtime linked into the kernel
   * library binds to it, so it sees our allocations and we see its launches. */
  step = "cuDevicePrimaryCtxRetain";
  if ((rc = cuDevicePrimaryCtxRetain(&dev->context, dev->device)) != 0) goto fail;
  step = "cuCtxSetCurrent";
  if ((rc = cuCtxSetCurrent(dev->context)) != 0) {
    dev->cuDevicePrimaryCtxRelease(dev->device);
    goto fail;
  }
  return dev;

fail:
  driver_error(dev, step, rc, err, errlen);
fail_quiet:
  dlclose(dev->lib);
  free(dev);
  return NULL;
}

const char* cuda_device_name(const cuda_device* dev) { return dev->name; }

int cuda_device_alloc(cuda_device* dev, size_t bytes, uint64_t* ptr, char* err, size_t errlen) {
  CUdeviceptr p = 0;
  CUresult rc = dev->cuMemAlloc(&p, bytes);
  if (rc != 0) return driver_error(dev, "cuMemAlloc", rc, err, errlen);
  *ptr = p;
  return 0;
}

int cuda_device_upload(cuda_device* dev, uint64_t dst, const void* src, size_t bytes, char* err, size_t errlen) {
  CUresult rc = dev->cuMemcpyHtoD(dst, src, bytes);
  return rc == 0 ? 0 : driver_error(dev, "cuMemcpyHtoD", rc, err, errlen);
}

int cuda_device_download(cuda_device* dev, void* dst, uint64_t src, size_t bytes, char* err, size_t errlen) {
  CUresult rc = dev->cuMemcpyDtoH(dst, src, bytes);
  return rc == 0 ? 0 : driver_error(dev, "cuMemcpyDtoH", rc, err, errlen);
}

int cuda_device_sync(cuda_device* dev, char* err, size_t errlen) {
  /* The whole context, not one stream: a kernel library may launch on the legacy default
   * stream or on a per-thread one, and this waits for either. */
  CUresult rc = dev->cuCtxSynchronize();
  return rc == 0 ? 0 : driver_error(dev, "cuCtxSynchronize", rc, err, errlen);
}

void cuda_device_free(cuda_device* dev, uint64_t ptr) {
  if (ptr != 0) dev->cuMemFree(ptr);
}

void cuda_device_close(cuda_device* dev) {
  if (dev == NULL) return;
  dev->cuDevicePrimaryCtxRelease(dev->device);
  /* The driver stays loaded: the kernel library's CUDA runtime may still hold it, and
   * unloading libcuda under a live runtime is not something the driver promises to survive. */
  free(dev);
}
