/* Fixture of the layers_catches test: real/ code taking its fault rules
 * from the simulator's API instead of ckh/fault_rule.h.
 * cmake/check_layers.cmake must reject the first include. Never compiled. */
#include "ckh/sim.h"
#include "ckh/fault_rule.h"
