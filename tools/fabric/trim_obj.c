/* The compiled trimmer (trim.bpf.c), embedded so the tool needs no file
 * at run time.  fabric.mk passes the object's path as MRC_TRIM_BPF_OBJ. */
#include <stddef.h>

__asm__(".section .rodata\n"
	".balign 8\n"
	".global mrc_trim_bpf_obj\n"
	"mrc_trim_bpf_obj:\n"
	".incbin \"" MRC_TRIM_BPF_OBJ "\"\n"
	".global mrc_trim_bpf_obj_end\n"
	"mrc_trim_bpf_obj_end:\n"
	".previous\n");
