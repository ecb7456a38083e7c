/* Fixture of the layers_catches test: harness/ code including a private
 * header of sim/ (what the crash explorer once did). Never compiled. */
#include "coro.h"
#include "search/shim.h"
