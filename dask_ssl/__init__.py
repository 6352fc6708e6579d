"""dask-ssl: semi-supervised classifiers from Sindhwani's and Rosenberg's theses, on Dask."""

__version__ = "0.1.0"
