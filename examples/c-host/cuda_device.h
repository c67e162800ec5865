/* cuda_device.h: the little of the CUDA Driver API the C host needs to put its tensors on
 * a GPU, reached with dlopen("libcuda.so.1") so that the host builds and runs on machines
 * with no CUDA at all (there cuda_device_open() just fails, saying why). */
#ifndef KH_C_HOST_CUDA_DEVICE_H
#define KH_C_HOST_CUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cuda_device cuda_device; /* the driver library, device 0 and its primary context */

/* Loads the driver, initialises it and makes device 0's primary context current on this
 * thread. That is the context the CUDA runtime inside a kernel library uses, so pointers
 * from cuda_device_alloc() are valid there. On failure returns NULL and writes the reason
 * to err (errlen bytes). */
cuda_device* cuda_device_open(char* err, size_t errlen);

/* "NVIDIA H200 (sm90)": lives as long as dev. */
const char* cuda_device_name(const cuda_device* dev);

/* Device memory. Each returns 0 on success, else -1 with the driver's error in err. */
int cuda_device_alloc(cuda_device* dev, size_t bytes, uint64_t* ptr, char* err, size_t errlen);
int cuda_device_upload(cuda_device* dev, uint64_t dst, const void* src, size_t bytes, char* err, size_t errlen);
int cuda_device_download(cuda_device* dev, void* dst, uint64_t src, size_t bytes, char* err, size_t errlen);
/* Waits for all work queued in the context (the op runs on the default stream). */
int cuda_device_sync(cuda_device* dev, char* err, size_t errlen);
void cuda_device_free(cuda_device* dev, uint64_t ptr);

/* Releases the primary context (the driver stays loaded). NULL is ignored. */
void cuda_device_close(cuda_device* dev);

#endif
