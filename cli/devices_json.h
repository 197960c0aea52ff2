/* SPDX-License-Identifier: MIT */
/*
 * JSON form of the node and device model, as printed by `rtune devices --json` and embedded in run documents.
 */
#ifndef RT_DEVICES_JSON_H
#define RT_DEVICES_JSON_H

#include <jansson.h>

#include "rt_model.h"

/* Each returns a new reference the caller owns, or NULL when memory runs out. Absent values (-1, "") become null. */
json_t *rt_node_to_json(const struct rt_node_info *node);
json_t *rt_device_to_json(const struct rt_device_info *dev);
/* {"schema": {"name": "rtune-devices", "version": "1.0"}, "node": {...}, "devices": [...]} (docs/json-formats.md) */
json_t *rt_devices_to_json(const struct rt_node_info *node, const struct rt_device_info *devs, int n);

#endif
