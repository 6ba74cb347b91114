"""The OpenCL kernel templates of clradix (Mako, one ``.cl.mako`` file per kernel family).

In a source checkout this folder sits at the top level; installed, it is the package
``clradix.cl_templates``. :mod:`clradix.render` finds it either way.
"""
