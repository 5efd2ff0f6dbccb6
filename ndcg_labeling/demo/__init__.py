"""``demo``: the whole pipeline on the bundled demo set (:mod:`.run`), with the quality, behavior and online
parts it plays (:mod:`.quality`, :mod:`.behavior`, :mod:`.online`)."""
