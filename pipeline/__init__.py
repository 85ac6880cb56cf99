"""PySpark jobs and a Spark data source over kafkalite (and Apache Kafka) log directories.

Needs the ``pipeline`` extra: ``pip install 'kafkalite[pipeline]'``.
"""
