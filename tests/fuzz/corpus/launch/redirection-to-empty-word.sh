#!/bin/b"sh

# Run
  min_offl
  - 1
  - 1
<<<<<  molr_wa.0r_biap#!/bin/b"sh

# Run
  min_offl
  - 1
  - 1
<<<<<  molr_wa.0r_biapt-oss
)

t-oss
)

s_