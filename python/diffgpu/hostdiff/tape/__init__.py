"""`dg.Tape`: the gradient of a whole program of launches (and `dg.copy`,
`dg.fill`), right whatever the launches overwrite, with binomial
checkpointing. `tape` (the user's object), `record` (the recording and its
versions), `arrays` (buffers, views, copies, fingerprints), `reverse` (the
reverse of each operation, through `dg.vjp`'s planning and replay),
`revolve` (the checkpointing schedule), `ops` (`dg.copy`, `dg.fill`), `dot`
(`tape.visualize`), `graphs` (`tape.capture`: CUDA graphs), `errors`.

May import what diffgpu.hostdiff may (its own modules, driver, runtime and
the foundation); the launch path reaches it only through
runtime/fastpath.py `RECORD`, which the tape sets.
"""
