/* Planted violation: the scenario model includes an executor's header. */
#include "exec/driver.h"
