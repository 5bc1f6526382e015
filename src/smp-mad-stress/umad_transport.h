/* The real transport: SMPs through the kernel's umad agent (libibumad) on a
 * local InfiniBand port. */
#ifndef SMP_UMAD_TRANSPORT_H
#define SMP_UMAD_TRANSPORT_H

#include "window.h"

typedef struct umad_target {
    char ca[64];        /* requested CA name; "" = the default */
    int port;           /* 0 = the first active port */
    int mgmt_class;     /* SMP_CLASS_LID or SMP_CLASS_DIRECT */
    char ca_found[64];  /* filled by umad_probe */
    unsigned base_lid;
    int port_found;
} umad_target;

/* Checks that the CA exists, as libibumad sees it (umad_get_ca; the list of
 * CA names can name a device that does not exist). Returns 0, or a negative
 * errno with a message saying what is missing. */
int umad_probe(umad_target *t, char *err, size_t errlen);
smt_transport umad_transport(umad_target *t);

#endif
