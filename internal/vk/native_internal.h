// Private to native.c and compute.c: the device's entry-point table.
#ifndef GOVRAM_VK_NATIVE_INTERNAL_H
#define GOVRAM_VK_NATIVE_INTERNAL_H
#include <pthread.h>
#include "native.h"

typedef void (*gv_pfn)(void);
typedef gv_pfn (*gv_gipa_t)(void* instance, const char* name);
typedef gv_pfn (*gv_gdpa_t)(void* device, const char* name);

extern gv_gipa_t gv_gipa;

// Device-level entry points used on the hot path.
typedef struct { uint32_t sType; const void* pNext; uint32_t flags; const void* inh; } gv_begin_info;
typedef struct {
	uint32_t sType; const void* pNext;
	uint32_t waitCount; const void* waits; const uint32_t* waitStages;
	uint32_t cmdCount; void* const* cmds;
	uint32_t signalCount; const void* signals;
} gv_submit_info;
typedef struct { uint64_t src, dst, size; } gv_copy_region;
typedef struct { uint32_t sType; const void* pNext; uint32_t src, dst; } gv_mem_barrier;

struct gv_device {
	void* device;
	int32_t (*ResetFences)(void*, uint32_t, const uint64_t*);
	int32_t (*GetFenceStatus)(void*, uint64_t);
	int32_t (*WaitForFences)(void*, uint32_t, const uint64_t*, uint32_t, uint64_t);
	int32_t (*ResetCommandBuffer)(void*, uint32_t);
	int32_t (*BeginCommandBuffer)(void*, const gv_begin_info*);
	int32_t (*EndCommandBuffer)(void*);
	void (*CmdCopyBuffer)(void*, uint64_t, uint64_t, uint32_t, const gv_copy_region*);
	void (*CmdFillBuffer)(void*, uint64_t, uint64_t, uint64_t, uint32_t);
	void (*CmdUpdateBuffer)(void*, uint64_t, uint64_t, uint64_t, const void*);
	void (*CmdPipelineBarrier)(void*, uint32_t, uint32_t, uint32_t, uint32_t, const gv_mem_barrier*,
	                           uint32_t, const void*, uint32_t, const void*);
	int32_t (*QueueSubmit)(void*, uint32_t, const gv_submit_info*, uint64_t);
	// Compute entry points (compute.c); GetBufferDeviceAddress is NULL on
	// drivers older than Vulkan 1.2.
	void (*CmdBindPipeline)(void*, uint32_t, uint64_t);
	void (*CmdPushConstants)(void*, uint64_t, uint32_t, uint32_t, uint32_t, const void*);
	void (*CmdDispatch)(void*, uint32_t, uint32_t, uint32_t);
	int32_t (*CreateShaderModule)(void*, const void*, const void*, uint64_t*);
	void (*DestroyShaderModule)(void*, uint64_t, const void*);
	int32_t (*CreatePipelineLayout)(void*, const void*, const void*, uint64_t*);
	void (*DestroyPipelineLayout)(void*, uint64_t, const void*);
	int32_t (*CreateComputePipelines)(void*, uint64_t, uint32_t, const void*, const void*, uint64_t*);
	void (*DestroyPipeline)(void*, uint64_t, const void*);
	uint64_t (*GetBufferDeviceAddress)(void*, const void*);
	// Memory and buffers (gv_allocate).
	int32_t (*CreateBuffer)(void*, const void*, const void*, uint64_t*);
	void (*DestroyBuffer)(void*, uint64_t, const void*);
	void (*GetBufferMemoryRequirements)(void*, uint64_t, void*);
	int32_t (*AllocateMemory)(void*, const void*, const void*, uint64_t*);
	void (*FreeMemory)(void*, uint64_t, const void*);
	int32_t (*BindBufferMemory)(void*, uint64_t, uint64_t, uint64_t);
	int32_t (*MapMemory)(void*, uint64_t, uint64_t, uint64_t, uint32_t, void**);
	// One lock per queue slot: vkQueueSubmit needs its queue externally
	// synchronised.
	pthread_mutex_t qlock[GV_MAX_QUEUES];
	// shared_queue: the transfer and compute queues are one VkQueue (a
	// device with one queue family), so slots 0 and 1 take one lock.
	int shared_queue;
};

#endif
