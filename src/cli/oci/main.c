/* placeholder; replaced by the agentnest-oci work */
#include <stdio.h>
int main(void) { fprintf(stderr, "agentnest-oci: not built yet\n"); return 1; }
