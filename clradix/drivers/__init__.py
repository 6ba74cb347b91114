"""Algorithm drivers: each builds its kernels for one planned policy and turns a job (a call
configuration) into a ready launch sequence (contract: drivers.base). Imports only
clradix.policies and clradix.core."""
