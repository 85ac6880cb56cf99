"""Request handlers: module-level functions ``handler(deps..., ctx, request)``, one module
per API or small family of APIs, in subpackages by what they serve (``cluster``, ``topics``,
``data``, ``groups``, ``transactions``, ``security``). They hold no state of their own;
``routes.py`` binds each to its typed dependencies and lists it, with its versions and ACL,
in the one table."""
