/* Fixture of the layers_catches test: a private header of sim/. */
