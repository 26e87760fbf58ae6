/* agentnest/image.h — the image store: import OCI layouts, oci-archive,
 * docker-archive and rootfs tars into verified, unpacked, read-only roots.
 * (Implementation and full API: src/image/.) */
#ifndef AGENTNEST_IMAGE_H
#define AGENTNEST_IMAGE_H
#include "agentnest/error.h"
#endif
