"""What the broker lets an operator or a test steer from outside, served over the admin
API and ``kafkalite ctl``: fault rules, coordinator scenarios and the controllable clock."""
