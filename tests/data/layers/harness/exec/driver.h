/* A header of the exec wing (fixture). */
