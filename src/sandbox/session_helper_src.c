/* sandbox/session_helper_src.c — embeds the Python session helper
 * (session_helper.py) into the library as an_session_python_helper, so no
 * file has to be found at run time (the library reads no paths of its
 * own) and the sandbox gets exactly the program this build ships.  The
 * Makefile makes this object depend on the .py. */
#include "sandbox/session_internal.h"

__asm__(".section .rodata\n"
        ".global an_session_python_helper\n"
        ".type an_session_python_helper, @object\n"
        "an_session_python_helper:\n"
        ".incbin \"src/sandbox/session_helper.py\"\n"
        ".byte 0\n"
        ".size an_session_python_helper, . - an_session_python_helper\n"
        ".previous\n");
