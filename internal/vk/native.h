// Hand-written C for the few Vulkan calls the Go bindings lack (Vulkan 1.1+
// queries, device addresses, compute pipelines) and for the hot path, which
// records copies and dispatches, submits and polls in one cgo call. Only the struct layouts used here are declared, so no Vulkan
// headers are needed at build time.
#ifndef GOVRAM_VK_NATIVE_H
#define GOVRAM_VK_NATIVE_H
#include <stdint.h>
#include <stddef.h>

// gv_load opens the Vulkan loader (libvulkan.so.1, then libvulkan.so) and
// returns its vkGetInstanceProcAddr, or NULL with a reason in err.
void* gv_load(char* err, size_t errlen);

typedef struct {
	uint64_t max_alloc;       // VkPhysicalDeviceMaintenance3Properties.maxMemoryAllocationSize
	uint32_t driver_id;
	char driver_name[256];
	char driver_info[256];
	int has_props2;
} gv_props2;

int gv_query_props2(void* instance, void* phys, int want_driver, gv_props2* out);
int gv_query_budget(void* instance, void* phys, uint64_t* budget, uint64_t* usage);

// gv_queue_families writes the queue flags and queue count of up to max of
// phys's queue families and returns how many it has (0 on failure).
uint32_t gv_queue_families(void* instance, void* phys, uint32_t* flags, uint32_t* counts, uint32_t max);

// gv_extensions writes phys's extension names into buf, each ended by a
// NUL, and returns the bytes they need (more than len: call again with a
// larger buf), or -1 on failure.
int64_t gv_extensions(void* instance, void* phys, char* buf, int64_t len);

typedef struct gv_device gv_device;

// Queue slots: 0 transfer, 1 compute, 2 a second transfer queue.
#define GV_MAX_QUEUES 3

gv_device* gv_device_new(void* instance, void* device);

// gv_memory is a buffer over the whole of a memory allocation.
typedef struct {
	void* mem;     // VkDeviceMemory
	void* buf;     // VkBuffer
	void* ptr;     // the mapping, or NULL
	uint64_t addr; // the buffer's device address, or 0
} gv_memory;

// Steps of gv_allocate, for its error.
enum { GV_ALLOC_BUFFER = 0, GV_ALLOC_TYPE = 1, GV_ALLOC_MEMORY = 2, GV_ALLOC_BIND = 3, GV_ALLOC_MAP = 4 };

// gv_allocate creates a buffer of size bytes with usage (shared by the nfam
// queue families fams when nfam > 1), allocates memory of type for it
// (with device addresses when bda), binds the two and maps the memory when
// map. It returns a VkResult; on failure *step says which step failed
// (GV_ALLOC_TYPE: the type cannot hold the buffer) and nothing is left
// allocated.
int32_t gv_allocate(gv_device* d, uint64_t size, uint32_t type, uint32_t usage, uint32_t nfam,
                    const uint32_t* fams, int bda, int map, gv_memory* out, int* step);
void gv_device_free(gv_device* d);

enum { GV_OP_COPY = 0, GV_OP_FILL = 1, GV_OP_UPDATE = 2, GV_OP_BARRIER = 3, GV_OP_DISPATCH = 4 };

// gv_op is one command. For GV_OP_UPDATE, data_off indexes the data blob
// passed to gv_submit (vkCmdUpdateBuffer copies it at record time). For
// GV_OP_DISPATCH, src is a gv_pipeline*, the push constants are size bytes
// of the blob at data_off, and groups the workgroup counts.
typedef struct {
	uint32_t kind;
	uint32_t value;
	uint64_t src, dst;        // VkBuffer handles
	uint64_t src_off, dst_off, size;
	uint64_t data_off;
	uint32_t groups[3];
} gv_op;

// Compute: features, device addresses and pipelines (compute.go).
typedef struct {
	int buffer_device_address;
} gv_features;

int gv_query_features(void* instance, void* phys, gv_features* out);
// gv_bda_features is a VkPhysicalDeviceBufferDeviceAddressFeatures with the
// feature on, for VkDeviceCreateInfo.pNext; gv_alloc_flags is a
// VkMemoryAllocateFlagsInfo asking for device addresses. Both are static.
const void* gv_bda_features(void);
const void* gv_alloc_flags(void);
int gv_device_has_bda(gv_device* d);
void gv_device_share_queue(gv_device* d);
uint64_t gv_buffer_address(gv_device* d, uint64_t buffer);

typedef struct gv_pipeline gv_pipeline;
int32_t gv_pipeline_new(gv_device* d, const uint32_t* code, size_t size, uint32_t push,
                        const uint32_t* spec, uint32_t nspec, gv_pipeline** out);
void gv_pipeline_free(gv_device* d, gv_pipeline* p);

// gv_submit records ops into cmd and submits it to queue slot q with
// fence. transfer_only: the queue's family has no compute (barriers name
// transfer stages only). wait_sem (0: none) is waited for before the
// commands' stages wait_stage; signal_sem (0: none) is signalled after them.
int32_t gv_submit(gv_device* d, int q, int transfer_only, void* queue, void* cmd, uint64_t fence,
                  const gv_op* ops, int n, const void* data,
                  uint64_t wait_sem, uint32_t wait_stage, uint64_t signal_sem);
int32_t gv_wait(gv_device* d, uint64_t fence, uint64_t timeout_ns);
int32_t gv_fence_status(gv_device* d, uint64_t fence);
#endif
