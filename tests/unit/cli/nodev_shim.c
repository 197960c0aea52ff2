// SPDX-License-Identifier: MIT
/*
 * Test shim, LD_PRELOADed into rtune: a libibverbs that sees no device at all (an empty device list), so the no-device
 * path can be tested on any machine, including ones that have RDMA hardware.
 */
#include <stdlib.h>

struct ibv_device;

struct ibv_device **ibv_get_device_list(int *num_devices);
void ibv_free_device_list(struct ibv_device **list);

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	if (num_devices)
		*num_devices = 0;
	return calloc(1, sizeof(struct ibv_device *));
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}
