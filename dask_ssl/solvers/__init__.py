"""The solvers the estimators are shells over: plain functions (and the L2-SVM-MFN solver
object the outer loops keep between calls) that take arrays or row blocks and return named
results.

- :mod:`.mfn`: L2-SVM-MFN on row blocks (thesis 6.2): Gram + Cholesky or CG Newton systems,
  exact line search; the linear estimators and the S3VMs' inner solves.
- :mod:`.primal`: the primal LapRLS / LapSVM on kernel row blocks on the workers.
- :mod:`.dense`: LapRLS / LapSVM solved dense on the driver.
- :mod:`.graph`: the graph transduction system by block CG on the workers.
- :mod:`.eigenfunction`: sparse eigenfunction bases (the kernel matrix's eigenvectors, exact or
  from Nystrom features on the workers, the no-sign-change filter, the Lasso).
"""
