/* Fixture of the layers_catches test: reference/ code reaching into sim/.
 * cmake/check_layers.cmake must reject both includes. Never compiled. */
#include "../sim/coro.h"
#include "ckh/sim.h"
#include "ckh/fs.h"
