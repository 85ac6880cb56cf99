"""kafkalite: a Kafka-protocol broker in Python on asyncio.

The subpackages live in the repository's top-level folders (``broker/``, ``protocol/``,
``coordinator/``, ``storage/``, ``pipeline/``) and are installed under this one import
name, so that generic names such as ``broker`` or ``storage`` never shadow a user's own
packages.
"""

__version__ = "0.1.0"
