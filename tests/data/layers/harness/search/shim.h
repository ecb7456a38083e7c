/* Fixture of the layers_catches test: a harness header (allowed). */
