pub mod linearizable;
